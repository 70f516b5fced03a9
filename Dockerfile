# The jai-agent worker image: `docker build -t jai-agent-worker .`
# Build stage: compile, bundle the workflows once (so a worker starts in seconds), drop dev dependencies. The
# optional peers (MCP SDK, OpenTelemetry's SDK) are kept: the image serves `mcpServers` and OTEL_* traces.
FROM node:20.19-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY scripts/build-console.ts ./scripts/
RUN npm run build \
 && node dist/cli/jai-agent.js bundle dist/workflow-bundle.js \
 && node -e "const p = require('./package.json'); for (const n of Object.keys(p.peerDependenciesMeta)) if (n !== '@temporalio/testing') p.dependencies[n] = p.peerDependencies[n]; require('fs').writeFileSync('package.json', JSON.stringify(p, null, 2))" \
 && npm prune --omit=dev --no-audit --no-fund

# Runtime stage: production dependencies, the built code and its workflow bundle; runs as the unprivileged `node` user.
FROM node:20.19-bookworm-slim
# Health and /metrics listen on loopback unless told otherwise; in the container they serve the orchestrator and Prometheus.
ENV NODE_ENV=production \
    JAI_HEALTH_PORT=8080 \
    JAI_HEALTH_HOST=0.0.0.0 \
    JAI_WORKSPACE=/workspace \
    TEMPORAL_ADDRESS=temporal:7233
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
RUN mkdir -p /workspace && chown node:node /workspace
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8080/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM drains: in-flight model calls and tools get JAI_SHUTDOWN_GRACE (30s) to finish.
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "dist/cli/worker-main.js"]
