/** The request methods a listener can receive: node's parser knows these alone. */
import { METHODS } from 'node:http'

/** Every method the gateway can receive; CONNECT never routes. */
export const PROXIED_METHODS: readonly string[] = METHODS.filter((m) => m !== 'CONNECT')
