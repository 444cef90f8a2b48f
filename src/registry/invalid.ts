/** What a record, or a field of one, parses to when it is not what keygate writes: the decision denies it. */
export const INVALID = 'invalid' as const
export type Invalid = typeof INVALID
