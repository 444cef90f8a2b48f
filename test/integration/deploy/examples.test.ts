/**
 * deploy/examples: every object with a known schema (Kubernetes, Gateway API, Istio)
 * holds against it, and each example is wired to what the authorizer overlay renders:
 * keygate's gRPC authorizer Service, its namespace and its port, fail-closed; and to the
 * demo backend that deploy/kubernetes' keygate.yaml names as its upstream. Envoy
 * Gateway's SecurityPolicy and Contour's resources have no published schema package:
 * they are parsed and checked field by field.
 */
import t, { type Test } from 'tap'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'
import type { IConfigMap, IService } from 'kubernetes-models/v1'
import type { IHTTPRoute } from '@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1'
import type { IReferenceGrant } from '@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1beta1'
import type { IAuthorizationPolicy } from '@kubernetes-models/istio/security.istio.io/v1'
import { readFileSync } from 'node:fs'
import { parseConfig } from '../../../src/config/load.js'
import {
  EXAMPLES_DIR, KUBERNETES_DIR, find, kustomize, modelOf, readObjects, validateObject, type K8sObject
} from '../../helpers/kubernetes.js'

const example = (path: string): URL => new URL(path, EXAMPLES_DIR)

// What the examples must reach: keygate's authorizer Service as the overlay renders it
const overlay = kustomize(fileURLToPath(new URL('overlays/authorizer', KUBERNETES_DIR)))
const authz = find<IService>(overlay, 'Service', 'keygate-authz')
const NAMESPACE = authz.metadata?.namespace ?? ''
const SERVICE = authz.metadata?.name ?? ''
const GRPC_PORT = authz.spec?.ports?.find((p) => p.name === 'grpc')?.port
const FQDN = `${SERVICE}.${NAMESPACE}.svc.cluster.local`

const NO_SCHEMA = new Set(['gateway.envoyproxy.io/v1alpha1 SecurityPolicy',
  'projectcontour.io/v1alpha1 ExtensionService', 'projectcontour.io/v1 HTTPProxy'])

function checkSchemas (t: Test, objects: K8sObject[]): void {
  for (const o of objects) {
    const name = `${o.apiVersion} ${o.kind}`
    if (modelOf(o) === undefined) t.ok(NO_SCHEMA.has(name), `${name}: a kind without a schema package, checked below`)
    else t.doesNotThrow(() => { validateObject(o) }, `${name} ${o.metadata.name}`)
  }
}

t.test('the authorizer overlay serves gRPC on a named port', async (t) => {
  t.equal(NAMESPACE, 'keygate')
  t.equal(SERVICE, 'keygate-authz')
  t.equal(GRPC_PORT, 8083)
})

t.test('the demo backend is the upstream of the manifests\' keygate.yaml', async (t) => {
  const objects = readObjects(example('demo-backend.yaml'))
  checkSchemas(t, objects)
  const service = find<IService>(objects, 'Service', 'backend')
  const configMap = overlay.find((o) => o.kind === 'ConfigMap') as IConfigMap
  const config = parseConfig(configMap.data?.['keygate.yaml'] ?? '', {}, 'keygate.yaml')
  t.equal(config.upstreams.core?.url,
    `http://backend.${service.metadata?.namespace ?? ''}.svc.cluster.local:${service.spec?.ports?.[0]?.port ?? ''}`)
})

t.test('Envoy Gateway: a SecurityPolicy with extAuth over gRPC to keygate, granted across namespaces', async (t) => {
  const objects = readObjects(example('envoy-gateway/gateway.yaml'))
  checkSchemas(t, objects)
  interface SecurityPolicy extends K8sObject {
    spec: {
      targetRefs: Array<{ group: string, kind: string, name: string }>
      extAuth: { failOpen?: boolean, timeout?: string, grpc?: { backendRefs: Array<{ name: string, namespace?: string, port: number }> } }
    }
  }
  const policy = find<SecurityPolicy>(objects, 'SecurityPolicy', 'keygate')
  t.equal(policy.apiVersion, 'gateway.envoyproxy.io/v1alpha1')
  t.same(policy.spec.extAuth.grpc?.backendRefs, [{ name: SERVICE, namespace: NAMESPACE, port: GRPC_PORT }])
  t.equal(policy.spec.extAuth.failOpen, false, 'fail closed')
  t.equal(policy.spec.extAuth.timeout, '2s', 'past keygate\'s own slowest answer')
  const target = policy.spec.targetRefs[0]
  t.same([target?.group, target?.kind], ['gateway.networking.k8s.io', 'HTTPRoute'])
  const route = find<IHTTPRoute>(objects, 'HTTPRoute', target?.name ?? '')
  t.equal(route.metadata?.namespace, policy.metadata.namespace, 'the route is in the policy\'s namespace')
  t.same(route.spec?.rules?.[0]?.backendRefs?.map((b) => [b.name, b.port]), [['backend', 3000]])
  t.equal(route.spec?.rules?.[0]?.matches?.[0]?.path?.value, '/api/v1', 'the routes of keygate.yaml')
  const grant = find<IReferenceGrant>(objects, 'ReferenceGrant', 'envoy-gateway-to-keygate')
  t.equal(grant.metadata?.namespace, NAMESPACE, 'granted by keygate\'s namespace')
  t.same(grant.spec?.from, [{ group: 'gateway.envoyproxy.io', kind: 'SecurityPolicy', namespace: policy.metadata.namespace }])
  t.same(grant.spec?.to, [{ group: '', kind: 'Service', name: SERVICE }])
})

t.test('Istio: a CUSTOM AuthorizationPolicy with the envoyExtAuthzGrpc provider keygate', async (t) => {
  const mesh = parse(readFileSync(example('istio/mesh-config.yaml'), 'utf8')) as {
    meshConfig: { extensionProviders: Array<{ name: string, envoyExtAuthzGrpc?: Record<string, unknown> }> }
  }
  const provider = mesh.meshConfig.extensionProviders.find((p) => p.envoyExtAuthzGrpc !== undefined)
  t.same(provider?.envoyExtAuthzGrpc, { service: FQDN, port: GRPC_PORT, timeout: '2s', failOpen: false, statusOnError: '503' })
  const objects = readObjects(example('istio/authorization-policy.yaml'))
  checkSchemas(t, objects)
  const policy = find<IAuthorizationPolicy>(objects, 'AuthorizationPolicy', 'keygate')
  t.equal(policy.spec?.action, 'CUSTOM')
  t.equal(policy.spec?.provider?.name, provider?.name, 'the provider of the mesh config')
  t.same(policy.spec?.rules?.[0]?.to?.[0]?.operation?.paths, ['/api/v1/*'])
})

t.test('Contour: an ExtensionService in keygate\'s namespace, bound by an HTTPS HTTPProxy', async (t) => {
  const objects = readObjects(example('contour/contour.yaml'))
  checkSchemas(t, objects)
  interface ExtensionService extends K8sObject {
    spec: { protocol: string, services: Array<{ name: string, port: number }> }
  }
  interface HTTPProxy extends K8sObject {
    spec: {
      virtualhost: {
        fqdn: string
        tls?: { secretName: string }
        authorization: { extensionRef: { name: string, namespace: string }, failOpen?: boolean }
      }
      routes: Array<{ conditions: Array<{ prefix: string }>, services: Array<{ name: string, port: number }> }>
    }
  }
  const ext = find<ExtensionService>(objects, 'ExtensionService', 'keygate')
  t.equal(ext.apiVersion, 'projectcontour.io/v1alpha1')
  t.equal(ext.metadata.namespace, NAMESPACE, 'in the namespace of the Service it binds, as Contour requires')
  t.same(ext.spec.services, [{ name: SERVICE, port: GRPC_PORT }])
  t.equal(ext.spec.protocol, 'h2c', 'HTTP/2 without TLS: keygate\'s gRPC listener by default')
  const proxy = find<HTTPProxy>(objects, 'HTTPProxy', 'api')
  t.same(proxy.spec.virtualhost.authorization.extensionRef, { name: ext.metadata.name, namespace: NAMESPACE })
  t.equal(proxy.spec.virtualhost.authorization.failOpen, false, 'fail closed')
  t.ok(proxy.spec.virtualhost.tls?.secretName, 'a TLS virtual host: Contour authorizes no other')
  t.same(proxy.spec.routes[0]?.services, [{ name: 'backend', port: 3000 }])
})

t.test('Envoy: ext_authz over gRPC to keygate before the router, HTTP/2, fail closed', async (t) => {
  interface Address { socket_address: { address: string, port_value: number } }
  interface Cluster {
    name: string
    typed_extension_protocol_options?: Record<string, { explicit_http_config?: { http2_protocol_options?: object } }>
    health_checks?: Array<{ grpc_health_check?: object }>
    load_assignment: { endpoints: Array<{ lb_endpoints: Array<{ endpoint: { address: Address } }> }> }
  }
  interface Filter { name: string, typed_config: Record<string, unknown> }
  const envoy = parse(readFileSync(example('envoy/envoy.yaml'), 'utf8')) as {
    static_resources: {
      listeners: Array<{ filter_chains: Array<{ filters: Filter[] }> }>
      clusters: Cluster[]
    }
  }
  const hcm = envoy.static_resources.listeners[0]?.filter_chains[0]?.filters[0]
  t.equal(hcm?.name, 'envoy.filters.network.http_connection_manager')
  const filters = (hcm?.typed_config.http_filters ?? []) as Filter[]
  t.same(filters.map((f) => f.name), ['envoy.filters.http.ext_authz', 'envoy.filters.http.router'], 'decided, then routed')
  interface ExtAuthz {
    '@type': string
    transport_api_version: string
    failure_mode_allow: boolean
    status_on_error: { code: string }
    grpc_service: { envoy_grpc: { cluster_name: string } }
  }
  const extAuthz = filters[0]?.typed_config as unknown as ExtAuthz
  t.equal(extAuthz['@type'], 'type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz')
  t.equal(extAuthz.transport_api_version, 'V3')
  t.equal(extAuthz.failure_mode_allow, false, 'keygate unreachable: refused')
  t.equal(extAuthz.status_on_error.code, 'ServiceUnavailable')
  const cluster = envoy.static_resources.clusters.find((c) => c.name === extAuthz.grpc_service.envoy_grpc.cluster_name)
  const options = cluster?.typed_extension_protocol_options?.['envoy.extensions.upstreams.http.v3.HttpProtocolOptions']
  t.ok(options?.explicit_http_config?.http2_protocol_options, 'the authorizer cluster speaks HTTP/2')
  t.ok(cluster?.health_checks?.[0]?.grpc_health_check, 'checked with grpc.health.v1')
  const endpoint = cluster?.load_assignment.endpoints[0]?.lb_endpoints[0]?.endpoint.address.socket_address
  t.equal(endpoint?.port_value, GRPC_PORT, 'the gRPC authorizer\'s port')
  const hcmConfig = hcm?.typed_config as { route_config: { virtual_hosts: Array<{ routes: Array<Record<string, unknown>> }> } }
  const route = hcmConfig.route_config.virtual_hosts[0]?.routes[0]
  t.same(route?.request_headers_to_remove, ['authorization'], 'the key never reaches the backend')
})
