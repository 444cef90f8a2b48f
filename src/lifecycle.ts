/**
 * The gateway's background parts (the Redis health probe, push invalidation, the
 * refill, the usage writers, the request log's writer, the span export, the audit
 * export, the listeners), each with one lifecycle:
 * started once, in the order they were added; stopped once, in the reverse order, each
 * stop draining what the part holds (the last usage counts, the last spans) before the
 * parts it relies on stop. app.ts adds them all, in one place.
 */

export interface Background {
  /** for the log line of a stop that failed */
  readonly name: string
  start?: () => void
  /** drains what the part holds, then stops it; the next part stops once this settles */
  stop: () => void | Promise<void>
}

export class Lifecycle {
  private readonly parts: Background[] = []
  private started = false
  private stopping: Promise<void> | undefined

  /** `onError`: a stop that failed (the others stop regardless) */
  constructor (private readonly onError: (name: string, err: unknown) => void = () => {}) {}

  /** Adds a part after those it relies on; one added once the lifecycle started is started at once. */
  add (part: Background): this {
    if (this.stopping !== undefined) throw new Error(`lifecycle: ${part.name} added after the stop`)
    this.parts.push(part)
    if (this.started) part.start?.()
    return this
  }

  start (): void {
    if (this.started) return
    this.started = true
    for (const part of this.parts) part.start?.()
  }

  /** Every part, last added first, each awaited; a second call waits for the first. */
  async stop (): Promise<void> {
    this.stopping ??= this.stopAll()
    await this.stopping
  }

  /** the parts' names in the order they stop (tests, the docs) */
  get stopOrder (): string[] {
    return this.parts.map((p) => p.name).reverse()
  }

  private async stopAll (): Promise<void> {
    for (const part of [...this.parts].reverse()) {
      try {
        await part.stop()
      } catch (err) {
        this.onError(part.name, err)
      }
    }
  }
}
