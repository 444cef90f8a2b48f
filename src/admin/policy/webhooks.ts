/**
 * Who manages webhook endpoints (docs/webhooks.md): an admin, any endpoint (one without
 * an org gets every org's events); an org admin, its own org's only (an endpoint it adds
 * is its org's); another org's endpoint is 404, as if it did not exist. And what an
 * endpoint must be: known event types, a URL whose form and target are allowed
 * (src/webhooks/targets.ts decides the target; the action resolves it).
 */
import { EVENT_TYPES } from '../../webhooks/events.js'
import { AdminError } from '../model/errors.js'
import type { AdminScope } from '../model/principal.js'
import { requireOrgAdmin } from './scope-rules.js'

export interface WebhookInput {
  url: string
  events: string[]
  org?: string | undefined
  description?: string | undefined
}

/** The endpoint's org as the caller may add it, its events checked. */
export function decideAddWebhook (
  s: AdminScope, input: WebhookInput, targetProblem: string | undefined
): { org: string | undefined, events: string[] } {
  requireOrgAdmin(s, 'managing webhooks')
  if (s.scope !== 'admin' && input.org !== undefined && input.org !== s.org) {
    const why = `an org admin adds webhooks for its own org "${s.org}" only`
    throw new AdminError(why, 'forbidden', undefined, undefined, 'denied')
  }
  const events = [...new Set(input.events)]
  if (events.length === 0) throw new AdminError('a webhook needs at least one event', 'invalid')
  const unknown = events.filter((e) => !(EVENT_TYPES as readonly string[]).includes(e))
  if (unknown.length > 0) {
    throw new AdminError(`unknown event ${unknown.join(', ')}; known: ${EVENT_TYPES.join(', ')}`, 'invalid')
  }
  if (targetProblem !== undefined) {
    throw new AdminError(`the webhook URL is refused: ${targetProblem} (webhooks.allow_private_targets)`, 'invalid')
  }
  return { org: s.scope === 'admin' ? input.org : s.org, events }
}

/** An endpoint the caller may see and manage: an org admin, its org's only (another is 404). */
export function visibleWebhook<E extends { org: string | undefined }> (s: AdminScope, id: string, e: E | undefined): E {
  requireOrgAdmin(s, 'managing webhooks')
  if (e === undefined || (s.scope !== 'admin' && e.org !== s.org)) {
    throw new AdminError(`webhook "${id}" does not exist`, 'not_found')
  }
  return e
}

/** The endpoints a listing shows the caller. */
export function visibleWebhooks<E extends { org: string | undefined }> (s: AdminScope, all: E[]): E[] {
  requireOrgAdmin(s, 'managing webhooks')
  return s.scope === 'admin' ? all : all.filter((e) => e.org === s.org)
}
