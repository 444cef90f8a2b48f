# syntax=docker/dockerfile:1
# keygate: multi-stage build. The runtime image holds production dependencies,
# the compiled gateway, the default config and the console, and runs as the non-root `node` user.

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY config ./config
# the Integrations console's static front end, served by the admin plane at /console
COPY console ./console
USER node
# data plane, admin plane (the admin plane binds loopback unless KEYGATE_ADMIN_LISTEN says otherwise)
EXPOSE 8080 8081
# /healthz on the admin plane, at KEYGATE_ADMIN_LISTEN (default 127.0.0.1:8081; a wildcard
# address is probed on loopback). An admin_listen set only in the config file is not seen here.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "const a=process.env.KEYGATE_ADMIN_LISTEN||'127.0.0.1:8081';const i=a.lastIndexOf(':');let h=a.slice(0,i);if(h.startsWith('['))h=h.slice(1,-1);if(h==='0.0.0.0')h='127.0.0.1';if(h==='::')h='::1';require('node:http').get({host:h,port:Number(a.slice(i+1)),path:'/healthz',timeout:2000},(r)=>process.exit(r.statusCode===200?0:1)).on('timeout',()=>process.exit(1)).on('error',()=>process.exit(1))"]
ENTRYPOINT ["node", "dist/cli/main.js"]
CMD ["serve"]
