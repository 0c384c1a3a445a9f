# The operator image: Node 24 runs the operator's sources with their types stripped at build time
# (tools/strip-types.ts, Node's own stripper), so the process never loads the stripper itself.
#
# Two stages: the first installs the production dependencies with npm on the public Node 24
# image; the second is only the node binary, the libraries it links, the app and a user to run
# as: no shell, no npm, no package manager, no dev dependencies or caches.
#
# NODE_IMAGE: the Node 24 image to build on (the public one by default; the tests build a
# stand-in here, since nothing can be pulled on their machine).
ARG NODE_IMAGE=node:24-slim

FROM ${NODE_IMAGE} AS build
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
# Type declarations, source maps and docs are not run: a third of the dependencies' bytes.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force \
 && find node_modules -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' \
      -o -iname 'README*' -o -iname 'CHANGELOG*' -o -iname 'HISTORY*' \) -delete
COPY src ./src
COPY tools/strip-types.ts ./tools/
RUN node --no-warnings tools/strip-types.ts src dist && rm -rf src tools
COPY crds ./crds
# The runtime's root: the node binary and the shared libraries it loads (as the loader finds them).
RUN set -e; mkdir -p /runtime/usr/local/bin /runtime/etc /runtime/tmp; \
    cp /usr/local/bin/node /runtime/usr/local/bin/node; \
    for lib in $(ldd /usr/local/bin/node | grep -o '/[^ ]*'); do \
      mkdir -p "/runtime$(dirname "$lib")"; cp -L "$lib" "/runtime$lib"; \
    done; \
    echo 'nonroot:x:65532:65532:nonroot:/nonexistent:/nonexistent' > /runtime/etc/passwd; \
    echo 'nonroot:x:65532:' > /runtime/etc/group; \
    chmod 1777 /runtime/tmp

FROM scratch
COPY --from=build /runtime /
COPY --from=build /app /app
ENV NODE_ENV=production
WORKDIR /app
USER 65532:65532
EXPOSE 9443 8080
# A small young generation (the admission thread sizes its own), an old one that grows little past what is live, and a larger inlining
# budget: src/admission/v8-tuning.ts's OPERATOR_NODE_FLAGS (V8 flags must be given at start;
# test/unit/node-flags.test.ts keeps them equal).
ENTRYPOINT ["/usr/local/bin/node", "--max-semi-space-size=2", "--heap-growing-percent=25", "--max-inlined-bytecode-size-cumulative=4000", "dist/main.js"]
