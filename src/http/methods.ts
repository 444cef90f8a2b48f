/**
 * The request methods a listener can receive: node's parser knows these alone (the list lives with the rules' grammar).
 */
export { PROXIED_METHODS } from '../config/rule-patterns.js'
