# The operator image: Node 24 runs the TypeScript sources directly (type stripping).
FROM node:24-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force
COPY src ./src
COPY crds ./crds
USER 65532:65532
EXPOSE 9443 8080
ENTRYPOINT ["node", "src/main.ts"]
