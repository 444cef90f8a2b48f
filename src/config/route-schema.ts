/**
 * The schema of a route and of a rule (docs/routing.md, docs/configuration.md), part of
 * the configuration schema (schema.ts). Checks across fields: routes.ts and rules.ts.
 */
import { Type } from '@sinclair/typebox'
import { PERMISSION_PATTERN } from './permission.js'

const Permission = Type.String({ pattern: PERMISSION_PATTERN, description: 'resource:action, in lower case' })
export const PATH_PREFIX = '^(/|(/[A-Za-z0-9._~!$&\'()*+,=:@-]+)+)$'
export const HeaderName = Type.String({ pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$", description: 'a header name' })

/** A route: how a client's request reaches one upstream (docs/routing.md); checks across fields: routes.ts */
export const Route = Type.Object({
  prefix: Type.String({ pattern: PATH_PREFIX, description: 'a path prefix like /api/v1, without a trailing slash' }),
  upstream: Type.String({ minLength: 1 }),
  /** the Host names the route serves (exact, or `*.example.com`); absent: any host */
  hosts: Type.Optional(Type.Array(Type.String({
    pattern: '^(\\*\\.)?([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)*[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$',
    description: 'a host name like api.example.com or *.example.com, without a port'
  }), { minItems: 1 })),
  /** the prefix is removed from the path forwarded */
  strip_prefix: Type.Optional(Type.Boolean()),
  /** the prefix is replaced by this one in the path forwarded */
  rewrite_prefix: Type.Optional(Type.String({
    pattern: PATH_PREFIX, description: 'a path prefix like /v2, without a trailing slash'
  })),
  /** a request header that may carry the key instead of `Authorization` (migrations, e.g. Kong's `apikey`) */
  key_header: Type.Optional(HeaderName),
  /** where test keys' requests go (docs/test-keys.md); absent: a test key is refused here (403) */
  test_upstream: Type.Optional(Type.String({ minLength: 1 }))
}, { additionalProperties: false })

export const Rule = Type.Object({
  method: Type.String({ pattern: '^(\\*|[A-Z][A-Z-]*)$', description: 'an HTTP method in capitals, or *' }),
  path: Type.String({ pattern: '^/', description: 'a path pattern starting with /' }),
  permissions: Type.Array(Permission, { default: [] }),
  org_param: Type.Optional(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' })),
  /** no key needed: requests without a credential pass anonymously (docs/routing.md) */
  public: Type.Optional(Type.Boolean()),
  /**
   * the units a request spends of its key's quota and credits (docs/quotas.md): a whole number (default 1, 0: free),
   * or `upstream`: the upstream's response says, in `quota.cost_header`
   */
  cost: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: 1_000_000_000 }), Type.Literal('upstream')])),
  /** `cost: upstream` without the header in the response: this many units (default 1) */
  default_cost: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000 }))
}, { additionalProperties: false })
