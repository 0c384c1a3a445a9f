// The linter's rules for the repository's TypeScript (`npm run lint`, run by `npm test` after the
// type check): ESLint's and typescript-eslint's recommended rules, without the type-aware ones (the
// type check already runs, and they would double the time on two cores), adjusted below with why.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // What .gitignore keeps out (ESLint does not read it).
  { ignores: ['**/dist/', '**/node_modules/', 'docs/.vitepress/cache/', 'docs/.vitepress/dist/', '.local/', 'bench/out/', '.prof/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // A disable comment that no longer disables anything is itself an error (it would hide the next one).
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // `any` stands where values cross an untyped boundary (worker messages, cel-js internals,
      // handler modules' JSON); strict mode and the type check hold the rest.
      '@typescript-eslint/no-explicit-any': 'off',
      // A leading underscore names what is taken out on purpose (`const { status: _status, ...rest }`).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
      // Errors are rethrown in the API server's (or the command's) words on purpose: the caught one
      // is an implementation detail the user must not see as a cause.
      'preserve-caught-error': 'off',
      // A `let` read by a closure before its one assignment (a forward reference) cannot be a const.
      'prefer-const': ['error', { destructuring: 'all', ignoreReadBeforeAssign: true }],
    },
  },
);
