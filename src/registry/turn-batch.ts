/**
 * Asks of one turn of the event loop sent to Redis together: the rate limiter's and the
 * quota meter's script calls (src/ratelimit/script.ts, src/quota/script.ts). An ask made
 * while no call is waiting on Redis is sent at once, alone (a lone request pays no
 * delay); one made while calls are in flight waits for the end of the turn
 * (setImmediate) and goes with the turn's others, at most `max` per call: one round
 * trip, one command for ioredis to encode and parse, one script run for Redis, however
 * many requests are waiting. `send` answers each ask of a call in order, an Error for
 * one that failed alone (its script's pcall); a call that fails fails every ask it carried.
 *
 * Without batching (`batches` false) every ask is its own call.
 */
export type SendAsks<A, R> = (asks: readonly A[]) => Promise<ReadonlyArray<R | Error | undefined>>

interface Waiting<A, R> {
  ask: A
  resolve: (r: R) => void
  reject: (err: unknown) => void
}

export class TurnBatch<A, R> {
  private waiting: Array<Waiting<A, R>> = []
  /** calls sent and not yet answered */
  private inflight = 0

  constructor (
    private readonly sendAsks: SendAsks<A, R>,
    private readonly max: number,
    private readonly batches: boolean,
    private readonly what: string
  ) {}

  async ask (a: A): Promise<R> {
    if (!this.batches || (this.inflight === 0 && this.waiting.length === 0)) {
      const [reply] = await this.call([a])
      if (reply instanceof Error || reply === undefined) throw reply ?? new Error(`${this.what}: no reply`)
      return reply
    }
    return await new Promise<R>((resolve, reject) => {
      if (this.waiting.length === 0) setImmediate(this.send)
      this.waiting.push({ ask: a, resolve, reject })
    })
  }

  private readonly send = (): void => {
    const batch = this.waiting
    this.waiting = []
    for (let i = 0; i < batch.length; i += this.max) {
      const chunk = batch.length <= this.max ? batch : batch.slice(i, i + this.max)
      this.call(chunk.map((w) => w.ask)).then((replies) => {
        chunk.forEach((w, j) => {
          const reply = replies[j]
          if (reply === undefined || reply instanceof Error) w.reject(reply ?? new Error(`${this.what}: no reply`))
          else w.resolve(reply)
        })
      }, (err: unknown) => { for (const w of chunk) w.reject(err) })
    }
  }

  private async call (asks: readonly A[]): Promise<ReadonlyArray<R | Error | undefined>> {
    this.inflight++
    try {
      return await this.sendAsks(asks)
    } finally {
      this.inflight--
    }
  }
}
