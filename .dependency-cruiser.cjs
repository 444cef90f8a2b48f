// The house's layering, checked by `npm run lint` (docs/architecture.md draws it).
// Each floor may import its own floor and those below it, never one above; within the
// admin wing, store < policy < actions < front ends. No circles anywhere.

/** The floors of src/, lowest first: a module imports only from its own floor or lower ones. */
const FLOORS = [
  ['config/', 'errors.ts', 'version.ts', 'peer.ts', 'client-address.ts', 'heap-growth.ts', 'logger.ts', 'lifecycle.ts'],
  ['registry/', 'metrics/'],
  ['redact.ts', 'tracing/'],
  ['ratelimit/', 'quota/', 'usage/', 'cache/', 'webhooks/'],
  ['decision/'],
  ['assertion/'],
  ['http/'],
  ['data-plane/', 'authorizer/', 'authorizer-grpc/', 'websocket/', 'admin/'],
  ['app.ts'],
  ['server.ts', 'workers.ts'],
  ['cli/', 'demo/']
]

/**
 * The admin wing's floors, lowest first: its vocabulary (model/: errors, views, principals,
 * limits, snapshots), the store, the policy, the actions, and the front ends (api/, sso/,
 * console, leaks/, as-code/, audit-export/; and outside src/admin/, the CLI and the demo).
 */
const ADMIN_FRONT_ENDS = [
  'api/', 'sso/', 'leaks/', 'as-code/', 'audit-export/', 'self-service.ts', 'console.ts', 'admin-plane.ts', 'metrics-route.ts',
  'options.ts', 'ops-routes.ts'
]
const ADMIN_FLOORS = [
  ['model/'],
  ['store/'],
  ['policy/'],
  ['actions/'],
  ADMIN_FRONT_ENDS
]

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
const pathsOf = (base, names) => `^${escape(base)}(${names.map(escape).join('|')})`

/** One rule per floor: nothing on it imports a floor above it. */
function floorRules (name, base, floors) {
  return floors.slice(0, -1).map((floor, i) => ({
    name: `${name}-${i + 1}-looks-up`,
    severity: 'error',
    comment: `${floor.join(' ')} stand below ${floors.slice(i + 1).flat().join(' ')}: a lower floor never imports a higher one`,
    from: { path: pathsOf(base, floor) },
    to: { path: pathsOf(base, floors.slice(i + 1).flat()) }
  }))
}

/** what a protocol-neutral module never imports: an HTTP library or node's HTTP servers */
const HTTP_LIBRARIES = '(^|node_modules/)(fastify|@fastify/[^/]+|undici|ws|@grpc/grpc-js)(/|$)|^(node:)?(http|https|http2)$'

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'no two modules import each other, however far round',
      from: {},
      to: { circular: true }
    },
    {
      name: 'decision-knows-no-http',
      severity: 'error',
      comment: 'src/decision/ is protocol-neutral: a front end maps its verdict to HTTP (src/http/)',
      from: { path: '^src/decision/' },
      to: { path: HTTP_LIBRARIES }
    },
    {
      name: 'decision-knows-no-front-end',
      severity: 'error',
      comment: 'src/decision/ stands below every front end that calls it',
      from: { path: '^src/decision/' },
      to: { path: '^src/(http|data-plane|authorizer|authorizer-grpc|websocket|admin|cli|demo)/|^src/(app|server|workers)\\.ts$' }
    },
    {
      name: 'config-stands-alone',
      severity: 'error',
      comment: 'src/config/ imports nothing of keygate above it',
      from: { path: '^src/config/' },
      to: { path: '^src/', pathNot: '^src/config/' }
    },
    {
      name: 'read-path-knows-no-admin',
      severity: 'error',
      comment: 'the request path never imports the admin wing',
      from: {
        path: '^src/(registry|metrics|tracing|ratelimit|quota|usage|cache|webhooks|decision|assertion|http|' +
          'data-plane|authorizer|authorizer-grpc|websocket)/'
      },
      to: { path: '^src/admin/' }
    },
    ...floorRules('floor', 'src/', FLOORS),
    {
      name: 'modules-on-a-floor',
      severity: 'error',
      comment: 'every module of src/ stands on one of the floors (FLOORS), so their rules hold it',
      from: { path: '^src/', pathNot: pathsOf('src/', FLOORS.flat()) },
      to: {}
    },
    ...floorRules('admin-floor', 'src/admin/', ADMIN_FLOORS),
    {
      name: 'admin-modules-on-a-floor',
      severity: 'error',
      comment: 'every module of src/admin/ stands on one of the wing\'s floors (ADMIN_FLOORS), so their rules hold it',
      from: { path: '^src/admin/', pathNot: pathsOf('src/admin/', ADMIN_FLOORS.flat()) },
      to: {}
    },
    {
      name: 'front-ends-call-actions',
      severity: 'error',
      comment: 'every admin front end (the admin API, SSO, the hooks, registry-as-code, the audit export, the CLI, the demo) reaches the registry through the admin actions, never the store or the policy',
      from: { path: `^src/(cli|demo)/|${pathsOf('src/admin/', ADMIN_FRONT_ENDS)}` },
      to: { path: '^src/admin/(store|policy)/' }
    }
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] }
  }
}
