import neostandard from 'neostandard'

export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'bench/dist/**', 'clients/*/dist/**', 'clients/typescript/src/admin-api.ts', 'node_modules/**', '.tap/**', 'coverage/**', '.scratch/**'] }),
  {
    // a source file of at most 300 lines, comments included: one concern a file, read top to bottom
    files: ['src/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'error', 'max-lines': ['error', { max: 300 }] }
  },
  {
    // V8 allocates a function literal assigned straight to a property (`o.f = () => ...`) in the
    // old generation, where a dead one keeps its context, and all that context holds, alive
    // through every scavenge until the next mark-compact: bind it to a const first
    // (patches/README.md, the same in ioredis)
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-syntax': ['error', {
        selector: 'AssignmentExpression[left.type="MemberExpression"] > :matches(ArrowFunctionExpression, FunctionExpression).right',
        message: 'bind the function to a const first, then assign it: V8 allocates a function literal assigned straight ' +
          'to a property in the old generation (patches/README.md)'
      }]
    }
  },
  {
    // code lines of at most 120 characters (a URL or a regular expression may run longer)
    files: ['src/**/*.ts', 'bench/**/*.ts', 'console/**/*.js'],
    rules: { '@stylistic/max-len': ['error', { code: 120, ignoreUrls: true, ignoreRegExpLiterals: true }] }
  },
  {
    // the decision core answers for every front end: it knows no listener and no HTTP server
    files: ['src/decision/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: ['fastify', 'http', 'node:http', 'https', 'node:https', 'http2', 'node:http2', 'undici'].map((name) => ({
          name, message: 'src/decision/ is protocol-neutral: a front end maps its verdict to HTTP (src/http/)'
        })),
        patterns: [
          { group: ['@fastify/*'], message: 'src/decision/ is protocol-neutral: a front end maps its verdict to HTTP (src/http/)' },
          {
            group: ['../http/*', '../data-plane/*', '../authorizer/*', '../websocket/*', '../admin/*', '../cli/*', '../app.js', '../server.js'],
            message: 'src/decision/ stands below the front ends that call it'
          }
        ]
      }]
    }
  },
  {
    // the console: API data is never parsed as HTML, the credential never stored
    files: ['console/**/*.js'],
    rules: {
      'no-restricted-globals': ['error', 'localStorage', 'sessionStorage', 'indexedDB'],
      'no-restricted-properties': ['error',
        { property: 'innerHTML' }, { property: 'outerHTML' }, { property: 'insertAdjacentHTML' },
        { property: 'localStorage' }, { property: 'sessionStorage' },
        { object: 'document', property: 'cookie' }, { object: 'document', property: 'write' }]
    }
  }
]
