/**
 * docs/.vitepress/config: the docs site, built by VitePress from docs/'s plain Markdown
 * (`npm run docs:build`, into docs/.vitepress/dist/, git-ignored; test/unit/docs-site.test.ts builds it
 * into a temporary folder).
 * The pages are written to read on any forge as they are: relative links between .md files, no
 * Vue or VitePress syntax in them. So this file only names the site and its sidebar, and gives
 * headings the anchors a forge gives them (tools/markdown-links.ts).
 */
import { defineConfig } from 'vitepress';
import { githubSlug } from '../../tools/markdown-links.ts';

const pages = [
  { text: 'Overview', link: '/' },
  { text: 'Getting started', link: '/getting-started' },
  { text: 'Install on your cluster', link: '/install' },
  { text: 'Concepts', link: '/concepts' },
  { text: 'Operating it', link: '/operating' },
  { text: 'Roll out a rule safely', link: '/rollout' },
  { text: 'Exceptions', link: '/exceptions' },
  { text: 'Conditions and reasons', link: '/conditions' },
  { text: 'Built-in handlers', link: '/handlers' },
  { text: 'Handler modules (your own)', link: '/handler-modules' },
  { text: 'Testing suites offline', link: '/offline' },
  { text: 'Command-line reference', link: '/cli' },
  { text: 'Benchmarks', link: '/benchmarks' },
  { text: 'Source layout', link: '/layout' },
];

const reference = [
  { text: 'API reference', link: '/reference/README' },
  { text: 'AdmissionSuite', link: '/reference/admissionsuite' },
  { text: 'AdmissionPolicy', link: '/reference/admissionpolicy' },
  { text: 'AdmissionException', link: '/reference/admissionexception' },
  { text: 'ClusterAdmissionException', link: '/reference/clusteradmissionexception' },
  { text: 'The contract (design)', link: '/design/contract' },
  { text: 'Decision records', link: '/adr/README' },
];

export default defineConfig({
  title: 'Portcullis',
  description: 'A Kubernetes operator that owns the whole life of admission webhooks.',
  // Dead links between pages fail the build. Links to the repository's other files (deploy/,
  // config/samples/, crds/) name a file, which the site leaves as it is (it holds docs/ only);
  // test/unit/docs-links.test.ts checks that each one resolves in the repository.
  // Headings get GitHub's anchors, so that a link written for the forge (`concepts.md#params`) lands on the site too.
  markdown: { anchor: { slugify: githubSlug } },
  themeConfig: {
    nav: [
      { text: 'Guide', link: '/getting-started' },
      { text: 'API reference', link: '/reference/README' },
    ],
    sidebar: [
      { text: 'Guide', items: pages },
      { text: 'Reference', items: reference },
    ],
    outline: { level: [2, 3] },
  },
});
