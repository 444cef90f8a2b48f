// Small numeric helpers.

export function mean (values: readonly number[]): number {
  if (values.length === 0) return Number.NaN
  return values.reduce((sum, v) => sum + v, 0) / values.length
}

export function median (values: readonly number[]): number {
  return percentile(Float64Array.from(values).sort(), 50)
}

/** Nearest-rank percentile of an ascending-sorted array. */
export function percentile (sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? Number.NaN
}

/** Append-only float buffer that grows geometrically (no per-sample allocation). */
export class Samples {
  #data = new Float64Array(1 << 16)
  #length = 0

  push (value: number): void {
    if (this.#length === this.#data.length) {
      const bigger = new Float64Array(this.#data.length * 2)
      bigger.set(this.#data)
      this.#data = bigger
    }
    this.#data[this.#length++] = value
  }

  sorted (): Float64Array {
    return this.#data.slice(0, this.#length).sort()
  }
}
