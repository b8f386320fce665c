// Layering rules checked by `npm run lint` (dependency-cruiser). The layers, top to bottom:
//   cli → server → ops → protocols → chat → engine → model → kernels → common
// A module may import its own layer and the layers below it, never one above.
// (native/ is C++ below kernels; bench/, test/ and scripts/ sit above everything.)
const LAYERS = ['cli', 'server', 'ops', 'protocols', 'chat', 'engine', 'model', 'kernels', 'common'];

const upward = LAYERS.slice(1).map((layer, i) => ({
  name: `no-upward-from-${layer}`,
  comment: `src/${layer} sits below ${LAYERS.slice(0, i + 1).join(', ')}: it may not import them`,
  severity: 'error',
  from: { path: `^src/${layer}/` },
  to: { path: `^src/(${LAYERS.slice(0, i + 1).join('|')})/` },
}));

module.exports = {
  forbidden: [
    ...upward,
    {
      name: 'no-circular',
      comment: 'modules that import each other (directly or through others) cannot be understood one at a time',
      severity: 'error',
      from: { path: '^src/' },
      // Type-only imports are erased at run time; a cycle through them does not tangle loading.
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'src-not-from-tests',
      comment: 'production code never imports test, bench or scripts code',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench|scripts)/' },
    },
    {
      name: 'no-unknown-layer',
      comment: 'every folder under src/ is one of the layers above (add new ones to LAYERS)',
      severity: 'error',
      from: { path: '^src/', pathNot: `^src/(${LAYERS.join('|')})/` },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
