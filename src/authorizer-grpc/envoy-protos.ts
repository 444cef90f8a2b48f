/**
 * Envoy's external authorization API, loaded from the `.proto` files Envoy publishes
 * (envoyproxy/envoy `api/envoy/service/auth/v3/external_auth.proto` and its imports:
 * `attribute_context.proto`, `config/core/v3/base.proto`, `google/rpc/status.proto`...),
 * as `@grpc/grpc-js-xds` ships them in its `deps/` (envoy-api, googleapis, xds,
 * protoc-gen-validate): the messages keygate reads and writes are Envoy's own, field
 * numbers included. Parsed once, at start (~80 ms), by protobufjs: the Check method's
 * codec (check-codec.ts) works on its types, and @grpc/proto-loader builds the service
 * definition from the same parse. The tests build their client from the same files.
 *
 * The interfaces below name the fields keygate reads of a CheckRequest and writes in a
 * CheckResponse, in the shape protobufjs decodes and encodes them (check-codec.ts): a
 * field not sent reads as its default ('', null for a message).
 */
import { fromJSON, type Options, type PackageDefinition, type ServiceDefinition } from '@grpc/proto-loader'
import { accessSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import protobuf from 'protobufjs'

export const AUTHORIZATION_SERVICE = 'envoy.service.auth.v3.Authorization'

/** field names as in the `.proto` (`socket_address`), 64-bit integers as strings, enums as their names */
export const LOAD_OPTIONS: Options = { keepCase: true, longs: String, enums: String, defaults: false, oneofs: true }

export const EXTERNAL_AUTH_PROTO = 'envoy/service/auth/v3/external_auth.proto'

/** `deps/` of @grpc/grpc-js-xds: the proto trees its Envoy API needs */
export function includeDirs (): string[] {
  const require = createRequire(import.meta.url)
  const deps = join(dirname(require.resolve('@grpc/grpc-js-xds/package.json')), 'deps')
  return ['envoy-api', 'googleapis', 'xds', 'protoc-gen-validate'].map((d) => join(deps, d))
}

let root: protobuf.Root | undefined

/**
 * `external_auth.proto` and everything it imports, parsed (on first use) as
 * @grpc/proto-loader parses them: field names as written, imports found in includeDirs().
 */
export function envoyAuthRoot (): protobuf.Root {
  if (root === undefined) {
    const dirs = includeDirs()
    const parsed = new protobuf.Root()
    const resolvePath = (_origin: string, target: string): string =>
      dirs.map((d) => join(d, target)).find(readable) ?? target
    parsed.resolvePath = resolvePath
    parsed.loadSync(EXTERNAL_AUTH_PROTO, { keepCase: true }).resolveAll()
    root = parsed
  }
  return root
}

function readable (file: string): boolean {
  try {
    accessSync(file)
    return true
  } catch {
    return false
  }
}

let loaded: PackageDefinition | undefined

/** The package definition of `external_auth.proto` and everything it imports (built on first use). */
export function envoyAuthDefinition (): PackageDefinition {
  loaded ??= fromJSON(envoyAuthRoot().toJSON(), LOAD_OPTIONS)
  return loaded
}

export function authorizationService (): ServiceDefinition {
  return envoyAuthDefinition()[AUTHORIZATION_SERVICE] as ServiceDefinition
}

// --- what keygate reads of a CheckRequest ---

interface HeaderValue {
  key?: string
  value?: string
  /** bytes: set instead of `value` when Envoy's `encode_raw_headers` is on */
  raw_value?: Buffer
}

export interface HttpRequest {
  method?: string
  /** the request target as it appeared on the request line: path and query, not decoded */
  path?: string
  host?: string
  /** lower-case names; repeated headers joined with `,` */
  headers?: Record<string, string>
  /** the headers as a list, when `encode_raw_headers` is on (`headers` is empty then) */
  header_map?: { headers?: HeaderValue[] } | null
}

export interface CheckRequest {
  attributes?: {
    source?: { address?: { socket_address?: { address?: string } | null } | null } | null
    request?: { http?: HttpRequest | null } | null
  } | null
}

// --- what keygate writes in a CheckResponse ---

/** envoy.config.core.v3.HeaderValueOption.HeaderAppendAction's OVERWRITE_IF_EXISTS_OR_ADD */
export const OVERWRITE_IF_EXISTS_OR_ADD = 2

export interface HeaderValueOption {
  header: { key: string, value: string }
  /** the enum's number, as protobufjs encodes it */
  append_action: number
}

export interface CheckResponse {
  /** google.rpc.Status: OK (0) allows; any other code refuses with `denied_response` */
  status: { code: number, message?: string }
  ok_response?: {
    headers: HeaderValueOption[]
    headers_to_remove: string[]
    response_headers_to_add: HeaderValueOption[]
  }
  denied_response?: {
    /** envoy.type.v3.HttpStatus: the status code's number */
    status: { code: number }
    headers: HeaderValueOption[]
    body: string
  }
}
