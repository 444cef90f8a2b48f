import neostandard from 'neostandard'

export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'bench/dist/**', 'node_modules/**', '.tap/**', 'coverage/**', '.scratch/**'] }),
  {
    files: ['src/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'error' }
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
