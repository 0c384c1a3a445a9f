# The operator image: Node 24 runs the operator as bundles made at build time (tools/build.ts,
# esbuild: one self-contained file per entry, dependencies included, types stripped), so the process
# loads no type stripper and no module it does not use.
#
# Two stages: the first installs the dependencies with npm on the public Node 24 image and bundles
# the app; the second is only the node binary, the libraries it links, the bundles and a user to
# run as: no shell, no npm, no package manager, no node_modules, no caches.
#
# NODE_IMAGE: the Node 24 image to build on (the public one by default; the tests build a
# stand-in here, since nothing can be pulled on their machine).
ARG NODE_IMAGE=node:24-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /build
COPY package.json package-lock.json ./
# The dev dependencies too: the bundler (esbuild) is one. None of node_modules reaches the image.
RUN npm ci --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY src ./src
COPY tools/build.ts ./tools/
RUN mkdir /app && node --no-warnings tools/build.ts /app/dist && cp package.json /app/
COPY crds /app/crds
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
