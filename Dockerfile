# syntax=docker/dockerfile:1
# keygate: multi-stage build. The runtime image holds production dependencies,
# the compiled gateway, the default config and the console, and runs as the non-root `node` user.

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY bench ./bench
RUN npm run build

FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
COPY package.json ./
COPY config ./config
# the Integrations console's static front end, served by the admin plane at /console
COPY console ./console
USER node
# data plane, admin plane (the admin plane binds loopback unless KEYGATE_ADMIN_LISTEN says otherwise)
EXPOSE 8080 8081
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "require('node:http').get('http://127.0.0.1:8081/healthz', (r) => process.exit(r.statusCode === 200 ? 0 : 1)).on('error', () => process.exit(1))"]
ENTRYPOINT ["node", "dist/src/cli/main.js"]
CMD ["serve"]
