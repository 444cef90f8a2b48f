import { setTimeout as sleep } from 'node:timers/promises'

/**
 * Polls `check` every `everyMs` until it holds; throws (naming `what`) after `ms`.
 * A check that throws counts as "not yet".
 */
export async function until (check: () => boolean | Promise<boolean>, ms: number, what: string, everyMs = 100): Promise<void> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (await Promise.resolve().then(check).catch(() => false)) return
    await sleep(everyMs)
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}`)
}
