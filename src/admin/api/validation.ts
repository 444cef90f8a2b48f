/**
 * JSON in: every route's params, query and body are checked against its TypeBox
 * schema by TypeBox's own compiler, so a field the schema does not list is refused
 * (fastify's default Ajv setup would silently drop it). An absent body is read as
 * `{}`, with or without `Content-Type: application/json` (a JSON `null` is refused).
 * A value or a property name (query or body, at any depth) that looks like a whole
 * keygate key (a secret pasted where an id or a name belongs) is refused before it
 * can reach the registry, the audit trail or a log (except in the body of a route
 * whose `config.takesKeys` says keys are what it takes: POST /keys/leaked); and a validation message, which
 * names the failing field, has anything key-shaped redacted (src/redact.ts).
 */
import type { FastifyInstance, FastifyRequest, FastifySchemaCompiler } from 'fastify'
import type { TSchema } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { parseDuration } from '../../config/duration.js'
import { ID_LENGTH, type KeyPrefixes } from '../../registry/key-format.js'
import { createRedactor, type Redactor } from '../../redact.js'
import { badField, badRequest } from './refusal.js'

class ValidationFailure extends Error {
  override readonly name = 'ValidationFailure'
}

export function useJsonValidation (app: FastifyInstance, keyPrefix: KeyPrefixes): void {
  const redact = createRedactor(keyPrefix)
  app.setValidatorCompiler(({ schema, httpPart }) => compile(schema as TSchema, httpPart, redact))

  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') {
      done(null, undefined)
      return
    }
    parseJson(request, body as string, (err, value) => {
      if (err === null && value === null) done(badRequest('body: JSON null'), undefined)
      else done(err, value)
    })
  })

  const prefixes = (typeof keyPrefix === 'string' ? [keyPrefix] : keyPrefix).join('|')
  const keyShape = new RegExp(`(?:${prefixes})[0-9A-Za-z]{${ID_LENGTH}}_[0-9A-Za-z]{20,}`, 'i')
  app.addHook('preValidation', async (request: FastifyRequest) => {
    // a route whose body is keys by design (leaked keys) takes them there, and only there
    const bodyTakesKeys = (request.routeOptions.config as { takesKeys?: boolean }).takesKeys === true
    if (
      holdsKey(request.params, keyShape) || holdsKey(request.query, keyShape) ||
      (!bodyTakesKeys && holdsKey(request.body, keyShape))
    ) {
      throw badRequest('a value looks like a whole keygate key; refused unread (the API takes key ids, never keys)')
    }
  })
}

function compile (
  schema: TSchema, httpPart: string | undefined, redact: Redactor
): (data: unknown) => { value?: unknown, error?: Error } {
  const check = TypeCompiler.Compile(schema)
  return (data: unknown) => {
    // fastify gives a request without a body `null` (a JSON `null` is refused by the parser below)
    const value = httpPart === 'body' && (data === undefined || data === null) ? {} : data
    if (check.Check(value)) return { value }
    // the failing field and rule, for the log line; never the value
    const first = check.Errors(value).First()
    return {
      error: new ValidationFailure(
        redact.text(`${httpPart ?? 'request'}${first?.path ?? ''}: ${first?.message ?? 'invalid'}`)
      )
    }
  }
}

/**
 * A route's own validator compiler for a body of records that the route checks one by
 * one, naming every bad record at once (POST /keys/import): the body is held to `outer`
 * (its shape and bounds) only; its params and query, as everywhere. The route's schema
 * (what the OpenAPI document shows) still describes exactly what the route accepts.
 */
export function recordsBodyValidator (keyPrefix: KeyPrefixes, outer: TSchema): FastifySchemaCompiler<unknown> {
  const redact = createRedactor(keyPrefix)
  return ({ schema, httpPart }) => compile(httpPart === 'body' ? outer : schema as TSchema, httpPart, redact)
}

/** A key in a string, or in a property name or value, down to depth 8 (the schemas are shallower). */
function holdsKey (value: unknown, keyShape: RegExp, depth = 0): boolean {
  if (typeof value === 'string') return keyShape.test(value)
  if (depth > 8 || typeof value !== 'object' || value === null) return false
  for (const [name, v] of Object.entries(value)) {
    if (keyShape.test(name) || holdsKey(v, keyShape, depth + 1)) return true
  }
  return false
}

/** A duration the schema admitted (`<n>s|m|h|d`) in ms; zero is refused, as on the command line. */
export function positive (field: string, text: string): number {
  const ms = parseDuration(text)
  if (ms === undefined || ms === 0) throw badField(field, 'expected a duration above zero, like 30s, 24h or 90d')
  return ms
}
