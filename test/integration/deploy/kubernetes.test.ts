/**
 * deploy/kubernetes, rendered with `kubectl kustomize` as a platform team applies it:
 * every object of every overlay holds against Kubernetes' schemas; the pods are non-root
 * (the Dockerfile's user), read-only, without capabilities, probed on /healthz and
 * /readyz, with requests and limits; secrets come from a Secret, never inline; the
 * ConfigMap's keygate.yaml is a valid configuration whose listeners are the container's
 * ports; the admin listener stays inside the cluster; Services, policies, the PDB, the HPA
 * and the ServiceMonitor select the pods and name ports they have.
 */
import t from 'tap'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'
import type { IDeployment } from 'kubernetes-models/apps/v1'
import type { IConfigMap, IContainer, IService } from 'kubernetes-models/v1'
import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1'
import type { IPodDisruptionBudget } from 'kubernetes-models/policy/v1'
import type { IHorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2'
import type { IServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1'
import { parseConfig } from '../../../src/config/load.js'
import {
  KUBERNETES_DIR, ROOT, find, kustomize, kustomizeVersion, selects, validateObject, type K8sObject
} from '../../helpers/kubernetes.js'

const dir = (path: string): string => fileURLToPath(new URL(path, KUBERNETES_DIR))

// The ServiceMonitor component on top of the proxy overlay, as its comment says to add it.
const scratch = mkdtempSync(join(tmpdir(), 'keygate-kustomize-'))
t.teardown(() => { rmSync(scratch, { recursive: true, force: true }) })
writeFileSync(join(scratch, 'kustomization.yaml'), [
  'apiVersion: kustomize.config.k8s.io/v1beta1',
  'kind: Kustomization',
  `resources: [${relative(scratch, dir('overlays/proxy'))}]`,
  `components: [${relative(scratch, dir('components/servicemonitor'))}]`,
  ''
].join('\n'))

const RENDERS: Record<string, string> = {
  base: dir('base'),
  proxy: dir('overlays/proxy'),
  authorizer: dir('overlays/authorizer'),
  'proxy + servicemonitor': scratch
}
const MODES = ['proxy', 'authorizer']

t.ok(kustomizeVersion().startsWith('v5.'), `kubectl's kustomize is v5 (${kustomizeVersion()})`)
const rendered = new Map(Object.entries(RENDERS).map(([name, path]) => [name, kustomize(path)]))
const objectsOf = (name: string): K8sObject[] => rendered.get(name) ?? []

// The image's user and ports, from the Dockerfile's runtime stage
const dockerfile = readFileSync(new URL('Dockerfile', ROOT), 'utf8')
const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '))
const [imageUid, imageGid] = (/^USER (\d+):(\d+)$/m.exec(runtime) ?? []).slice(1).map(Number)
const exposed = new Set((/^EXPOSE ([\d ]+)$/m.exec(runtime)?.[1] ?? '').split(' ').map(Number))

t.test('the validator refuses what Kubernetes would (it is not a no-op)', async (t) => {
  const deployment = structuredClone(find<K8sObject>(objectsOf('proxy'), 'Deployment', 'keygate'))
  t.doesNotThrow(() => { validateObject(deployment) })
  t.throws(() => { validateObject({ ...deployment, spec: { ...deployment.spec as object, replicas: 'two' } }) },
    /replicas must be integer/)
  t.throws(() => { validateObject({ ...deployment, spec: { template: {} } }) }, /selector/)
  t.throws(() => { validateObject({ ...deployment, kind: 'Deploymant' }) }, /no schema/)
})

for (const [name, objects] of rendered) {
  t.test(`${name}: every object holds against its schema`, async (t) => {
    t.ok(objects.length >= 7, `${objects.length} objects`)
    for (const o of objects) {
      t.doesNotThrow(() => { validateObject(o) }, `${o.kind} ${o.metadata.name}`)
      if (o.kind !== 'Namespace') t.equal(o.metadata.namespace, 'keygate', `${o.kind} ${o.metadata.name} in keygate`)
    }
    t.notOk(objects.some((o) => o.kind === 'Secret'), 'no Secret is shipped: it is created apart, never committed')
  })
}

for (const mode of MODES) {
  const objects = objectsOf(mode)
  const deployment = find<IDeployment>(objects, 'Deployment', 'keygate')
  const pod = deployment.spec?.template.spec
  const podLabels = deployment.spec?.template.metadata?.labels ?? {}
  const container = pod?.containers.find((c) => c.name === 'keygate') as IContainer
  const portsByName = new Map((container.ports ?? []).map((p) => [p.name, p.containerPort]))

  t.test(`${mode}: a non-root, read-only container without capabilities, the image's user`, async (t) => {
    t.equal(pod?.securityContext?.runAsNonRoot, true)
    t.equal(pod?.securityContext?.runAsUser, imageUid, 'the Dockerfile\'s USER')
    t.equal(pod?.securityContext?.runAsGroup, imageGid, 'and its group')
    t.equal(pod?.securityContext?.seccompProfile?.type, 'RuntimeDefault')
    t.equal(pod?.automountServiceAccountToken, false, 'no API token in the pod')
    for (const c of pod?.containers ?? []) {
      t.equal(c.securityContext?.readOnlyRootFilesystem, true, `${c.name}: read-only root`)
      t.equal(c.securityContext?.allowPrivilegeEscalation, false, `${c.name}: no privilege escalation`)
      t.same(c.securityContext?.capabilities?.drop, ['ALL'], `${c.name}: every capability dropped`)
      t.notOk(c.securityContext?.capabilities?.add, `${c.name}: none added`)
      t.notOk(c.securityContext?.privileged, `${c.name}: not privileged`)
    }
    t.notOk(pod?.volumes?.some((v) => v.hostPath !== undefined), 'no hostPath')
    for (const port of portsByName.values()) t.ok(exposed.has(port), `the Dockerfile EXPOSEs ${port}`)
  })

  t.test(`${mode}: probes on /healthz and /readyz of the admin port, requests and limits`, async (t) => {
    t.equal(portsByName.get('admin'), 8081)
    t.same(container.livenessProbe?.httpGet, { path: '/healthz', port: 'admin' })
    t.same(container.startupProbe?.httpGet, { path: '/healthz', port: 'admin' })
    t.same(container.readinessProbe?.httpGet, { path: '/readyz', port: 'admin' })
    for (const kind of ['requests', 'limits'] as const) {
      t.ok(container.resources?.[kind]?.cpu, `cpu ${kind}`)
      t.ok(container.resources?.[kind]?.memory, `memory ${kind}`)
    }
  })

  t.test(`${mode}: secrets from the Secret keygate, never inline`, async (t) => {
    const env = new Map((container.env ?? []).map((e) => [e.name, e]))
    t.same(env.get('KEYGATE_REDIS_URL')?.valueFrom?.secretKeyRef, { name: 'keygate', key: 'redis-url' })
    t.same(env.get('KEYGATE_ADMIN_TOKEN')?.valueFrom?.secretKeyRef,
      { name: 'keygate', key: 'admin-token', optional: true })
    for (const e of container.env ?? []) {
      t.notMatch(e.value ?? '', /rediss?:|:\/\/[^/]*@|password|secret|token/i, `${e.name} holds no secret`)
    }
    const configMap = objects.find((o) => o.kind === 'ConfigMap') as IConfigMap
    const file = parse(configMap.data?.['keygate.yaml'] ?? '') as Record<string, unknown>
    t.notOk('admin_token' in file, 'the ConfigMap\'s file holds no admin token')
    t.notMatch(JSON.stringify(file), /:\/\/[^/"]*@|password|secret/i, 'nor a URL with credentials')
  })

  t.test(`${mode}: the ConfigMap's keygate.yaml is valid and listens on the container's ports`, async (t) => {
    const configMap = objects.find((o) => o.kind === 'ConfigMap') as IConfigMap
    const mount = container.volumeMounts?.find((m) => m.name === 'config')
    const volume = pod?.volumes?.find((v) => v.name === 'config')
    t.equal(volume?.configMap?.name, configMap.metadata?.name, 'the pod mounts the generated ConfigMap')
    const env: Record<string, string> = { KEYGATE_REDIS_URL: 'redis://redis.keygate.svc:6379' }
    for (const e of container.env ?? []) if (e.value !== undefined) env[e.name] = e.value
    t.equal(env.KEYGATE_CONFIG, `${mount?.mountPath ?? '?'}/keygate.yaml`, 'KEYGATE_CONFIG names the mounted file')
    const config = parseConfig(configMap.data?.['keygate.yaml'] ?? '', env, `${mode} ConfigMap`, { forServing: true })
    const port = (address: string | undefined): number => Number(address?.split(':').pop())
    t.equal(port(config.listen), portsByName.get('http'), 'listen: the port named http')
    t.equal(port(config.admin_listen), portsByName.get('admin'), 'admin_listen: the port named admin')
    t.match(config.admin_listen, /^0\.0\.0\.0:/, 'the admin listener on the pod\'s address (the kubelet probes it)')
    t.equal(config.authz.proxy, 'envoy', 'decisions read the way Envoy names the request')
    t.ok(config.authz.trusted_peers.length > 0, 'decisions for named peers only')
    t.notOk(config.authz.trusted_peers.some((p) => p.endsWith('/0')), 'never every address')
    if (mode === 'authorizer') {
      t.equal(port(config.authz_listen), portsByName.get('authz-http'), 'authz_listen: the port named authz-http')
      t.equal(port(config.authz_grpc_listen), portsByName.get('authz-grpc'),
        'authz_grpc_listen: the port named authz-grpc')
    } else {
      t.equal(config.authz_listen, undefined, 'no authorizer in proxy mode')
      t.equal(config.authz_grpc_listen, undefined, 'nor a gRPC one')
      t.notOk(portsByName.has('authz-grpc'), 'nor its port')
    }
  })

  t.test(`${mode}: the admin listener stays inside the cluster`, async (t) => {
    const services = objects.filter((o) => o.kind === 'Service') as IService[]
    for (const s of services) {
      for (const p of s.spec?.ports ?? []) {
        if (p.targetPort === 'admin' || p.port === 8081) {
          t.equal(s.spec?.type ?? 'ClusterIP', 'ClusterIP', `${s.metadata?.name ?? ''} exposes admin as ClusterIP`)
        }
      }
      t.notOk(['NodePort', 'LoadBalancer'].includes(s.spec?.type ?? ''), `${s.metadata?.name ?? ''}: in-cluster`)
    }
    const policies = objects.filter((o) => o.kind === 'NetworkPolicy') as INetworkPolicy[]
    const ours = policies.filter((p) => selects(p.spec?.podSelector?.matchLabels, podLabels))
    t.ok(ours.length >= 2, 'the pods are selected by NetworkPolicies: what they do not allow is refused')
    for (const p of ours) {
      for (const rule of p.spec?.ingress ?? []) {
        const ports = (rule.ports ?? []).map((x) => x.port)
        t.ok(ports.length > 0, `${p.metadata?.name ?? ''}: each rule names its ports`)
        for (const port of ports) t.ok(portsByName.has(String(port)), `${String(port)} is a port of the container`)
        if (ports.includes('admin')) t.ok((rule.from ?? []).length > 0, 'the admin port admits named peers only')
        if (mode === 'authorizer') t.notOk(ports.includes('http'), 'the data plane is not reachable')
      }
    }
  })

  t.test(`${mode}: Services, the PDB and the HPA select these pods and name their ports`, async (t) => {
    for (const s of objects.filter((o) => o.kind === 'Service') as IService[]) {
      t.ok(selects(s.spec?.selector, podLabels), `${s.metadata?.name ?? ''} selects the pods`)
      for (const p of s.spec?.ports ?? []) {
        t.ok(portsByName.has(String(p.targetPort)), `${s.metadata?.name ?? ''}: ${String(p.targetPort)} exists`)
      }
    }
    const pdb = find<IPodDisruptionBudget>(objects, 'PodDisruptionBudget', 'keygate')
    t.ok(selects(pdb.spec?.selector?.matchLabels, podLabels), 'the PDB selects the pods')
    const hpa = find<IHorizontalPodAutoscaler>(objects, 'HorizontalPodAutoscaler', 'keygate')
    t.equal(hpa.spec?.scaleTargetRef.name, 'keygate')
    t.equal(hpa.spec?.metrics?.[0]?.resource?.name, 'cpu', 'on CPU')
    t.ok((hpa.spec?.minReplicas ?? 0) >= 2, 'never fewer than two pods')
    t.equal(deployment.spec?.replicas, undefined, 'the HPA owns the replica count')
    const annotations = deployment.spec?.template.metadata?.annotations ?? {}
    t.equal(annotations['prometheus.io/scrape'], 'true')
    t.equal(Number(annotations['prometheus.io/port']), portsByName.get('admin'), 'scraped on the admin port')
    t.equal(annotations['prometheus.io/path'], '/metrics')
  })
}

t.test('proxy mode: the data plane Service; authorizer mode: the gRPC and HTTP authorizer Service', async (t) => {
  const proxy = find<IService>(objectsOf('proxy'), 'Service', 'keygate')
  t.same(proxy.spec?.ports?.map((p) => [p.port, p.targetPort]), [[8080, 'http']])
  const authz = find<IService>(objectsOf('authorizer'), 'Service', 'keygate-authz')
  t.same(authz.spec?.ports?.map((p) => [p.name, p.port, p.targetPort]),
    [['grpc', 8083, 'authz-grpc'], ['http', 8082, 'authz-http']], 'port names tell Istio the protocol')
  t.notOk(objectsOf('authorizer').some((o) => o.kind === 'Service' && o.metadata.name === 'keygate'),
    'no data plane Service in authorizer mode')
})

t.test('the ServiceMonitor scrapes /metrics on the admin Service\'s admin port', async (t) => {
  const objects = objectsOf('proxy + servicemonitor')
  const monitor = find<IServiceMonitor>(objects, 'ServiceMonitor', 'keygate')
  const admin = find<IService>(objects, 'Service', 'keygate-admin')
  t.ok(selects(monitor.spec.selector.matchLabels, admin.metadata?.labels), 'it selects keygate-admin')
  const others = (objects.filter((o) => o.kind === 'Service') as IService[]).filter((s) => s !== admin)
  t.notOk(others.some((s) => selects(monitor.spec.selector.matchLabels, s.metadata?.labels)), 'and no other')
  t.same(monitor.spec.endpoints?.map((e) => [e.port, e.path]), [['admin', '/metrics']])
  t.ok(admin.spec?.ports?.some((p) => p.name === 'admin'), 'a port of that name')
})
