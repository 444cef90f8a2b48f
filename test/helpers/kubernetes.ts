/**
 * Kubernetes manifests for the deploy tests: `kubectl kustomize` renders a directory (the
 * kubectl of .ci/run, or KUBECTL), and every object is validated against the schemas of
 * the kubernetes-models packages: Kubernetes' own OpenAPI schemas, and the CRDs of the
 * Prometheus Operator, Gateway API and Istio. Their models do not validate on
 * construction: `validate()` does, and throws naming the field.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { parseAllDocuments } from 'yaml'
import * as core from 'kubernetes-models/v1'
import * as apps from 'kubernetes-models/apps/v1'
import * as policy from 'kubernetes-models/policy/v1'
import * as networking from 'kubernetes-models/networking.k8s.io/v1'
import * as autoscaling from 'kubernetes-models/autoscaling/v2'
import * as monitoring from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1'
import * as gateway from '@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1'
import * as gatewayBeta from '@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1beta1'
import * as istioSecurity from '@kubernetes-models/istio/security.istio.io/v1'

export const ROOT = new URL('../../', import.meta.url)
export const KUBERNETES_DIR = new URL('deploy/kubernetes/', ROOT)
export const EXAMPLES_DIR = new URL('deploy/examples/', ROOT)

/** What every object has; the rest is read through the models' interfaces. */
export interface K8sObject {
  apiVersion: string
  kind: string
  metadata: { name: string, namespace?: string, labels?: Record<string, string> }
  [field: string]: unknown
}

const MODULES: Record<string, object> = {
  v1: core,
  'apps/v1': apps,
  'policy/v1': policy,
  'networking.k8s.io/v1': networking,
  'autoscaling/v2': autoscaling,
  'monitoring.coreos.com/v1': monitoring,
  'gateway.networking.k8s.io/v1': gateway,
  'gateway.networking.k8s.io/v1beta1': gatewayBeta,
  'security.istio.io/v1': istioSecurity
}

type Model = new (data: object) => { validate: () => void }

/** The model of an object's apiVersion and kind, or undefined when none is known. */
export function modelOf (o: K8sObject): Model | undefined {
  const mod = MODULES[o.apiVersion] as Record<string, unknown> | undefined
  const model = mod?.[o.kind]
  return typeof model === 'function' ? model as Model : undefined
}

/** Validates one object against its schema; throws when it has none or does not hold. */
export function validateObject (o: K8sObject): void {
  const Model = modelOf(o)
  if (Model === undefined) throw new Error(`no schema for ${o.apiVersion} ${o.kind}`)
  new Model(o).validate()
}

export function parseObjects (text: string): K8sObject[] {
  return parseAllDocuments(text).flatMap((doc) => {
    const error = doc.errors[0]
    if (error !== undefined) throw new Error(error.message)
    const o: unknown = doc.toJS()
    return o === null || o === undefined ? [] : [o as K8sObject]
  })
}

export function readObjects (file: URL): K8sObject[] {
  return parseObjects(readFileSync(file, 'utf8'))
}

/** KUBECTL, else the one .ci/run unpacks when the machine has none with kustomize v5, else the PATH's */
const CI_KUBECTL = '/opt/keygate-kubectl/bin/kubectl'
const KUBECTL = process.env.KUBECTL ?? (existsSync(CI_KUBECTL) ? CI_KUBECTL : 'kubectl')

/** kubectl's embedded kustomize must be v5 (components, `labels`, `patches`); .ci/run installs one. */
export function kustomizeVersion (): string {
  const out = execFileSync(KUBECTL, ['version', '--client'], { encoding: 'utf8' })
  return /Kustomize Version: (v\S+)/.exec(out)?.[1] ?? 'none'
}

/** `kubectl kustomize <dir>`: the objects an overlay applies. */
export function kustomize (dir: string): K8sObject[] {
  return parseObjects(execFileSync(KUBECTL, ['kustomize', dir], { encoding: 'utf8', maxBuffer: 8 << 20 }))
}

export function find<T> (objects: K8sObject[], kind: string, name: string): T {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name)
  if (o === undefined) throw new Error(`no ${kind} ${name}`)
  return o as T
}

/** Does a selector's matchLabels (or a Service's selector) select these labels? */
export function selects (selector: Record<string, string> | undefined, labels: Record<string, string> = {}): boolean {
  if (selector === undefined || Object.keys(selector).length === 0) return false
  return Object.entries(selector).every(([k, v]) => labels[k] === v)
}
