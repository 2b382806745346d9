import { toJsonSchema } from '@valibot/to-json-schema';
import type * as v from 'valibot';
import type { Credential } from './route-auth.js';
import type { MountedRoute } from './uws-http.binding.js';

/*
 * The API description (issue 12: "a described API"), generated from the routes as mounted, so no
 * route can be served undescribed or described and absent. Bodies and queries come from the same
 * valibot schemas that parse them (`withBody`, `withQuery`), converted by @valibot/to-json-schema.
 */

type JsonSchema = Record<string, unknown>;

/** How each credential is presented, as OpenAPI security schemes. */
const SCHEMES: Record<Credential, { name: string; scheme: JsonSchema }> = {
  'direct-token': { name: 'apiToken', scheme: { type: 'http', scheme: 'bearer', description: 'The direct API token (`api.token`).' } },
  'admin-jwt': { name: 'accessToken', scheme: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An access token from POST /api/auth/login.' } },
  'admin-cookie': { name: 'sessionCookie', scheme: { type: 'apiKey', in: 'cookie', name: 'svc_access', description: 'The login cookie; mutating requests also send X-CSRF-Token equal to the sygen_csrf cookie.' } },
  'admin-static-token': { name: 'staticToken', scheme: { type: 'http', scheme: 'bearer', description: 'The static `api.token`: the legacy admin.' } },
  'agent-token': { name: 'agentToken', scheme: { type: 'http', scheme: 'bearer', description: "An agent's interagent token." } },
  'owner-token': { name: 'ownerToken', scheme: { type: 'http', scheme: 'bearer', description: "The main agent's token." } },
};

const ERROR = {
  type: 'object',
  required: ['error'],
  properties: { error: { type: 'string', description: 'What went wrong, for a person.' }, code: { type: 'string', description: 'Stable kebab-case code.' } },
};

function schemaOf(schema: v.GenericSchema): JsonSchema {
  // Checks and transforms JSON Schema cannot say are left out rather than failing the whole document.
  return toJsonSchema(schema, { target: 'draft-2020-12', errorMode: 'ignore' }) as JsonSchema;
}

/** `/api/chat/sessions/:id` → `/api/chat/sessions/{id}` and its path parameters. */
function openApiPath(pattern: string): { path: string; params: string[] } {
  const params: string[] = [];
  const path = pattern.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => {
    params.push(name);
    return `{${name}}`;
  });
  return { path, params };
}

function queryParameters(schema: v.GenericSchema): JsonSchema[] {
  const json = schemaOf(schema);
  const properties = (json.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((json.required ?? []) as string[]);
  return Object.entries(properties).map(([name, s]) => ({ name, in: 'query', required: required.has(name), schema: s }));
}

function operation(route: MountedRoute): JsonSchema {
  const { params } = openApiPath(route.pattern);
  const parameters = [
    ...params.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
    ...(route.query ? queryParameters(route.query) : []),
  ];
  const responses: JsonSchema = {
    '200': { description: 'OK' },
    default: { description: 'An error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
  };
  const op: JsonSchema = {
    operationId: `${route.method.toLowerCase()}${route.pattern.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
    tags: [route.surface],
    ...(route.summary ? { summary: route.summary } : {}),
    ...(parameters.length ? { parameters } : {}),
    responses,
  };
  if (route.body) op.requestBody = { required: true, content: { 'application/json': { schema: schemaOf(route.body) } } };
  else if (route.bodyType) op.requestBody = { required: true, content: { [route.bodyType]: { schema: {} } } };
  if (route.auth === 'public') op.security = [];
  else {
    op.security = route.auth.accepts.map((c) => ({ [SCHEMES[c].name]: [] }));
    if (route.auth.role) op['x-svc-role'] = route.auth.role;
  }
  return op;
}

/** The OpenAPI 3.1 document of `routes` (one server's mounted routes). */
export function openApiDocument(routes: readonly MountedRoute[], info: { title: string; version: string }): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const route of routes) {
    const { path } = openApiPath(route.pattern);
    (paths[path] ??= {})[route.method.toLowerCase()] = operation(route);
  }
  return {
    openapi: '3.1.0',
    info,
    paths,
    components: {
      schemas: { Error: ERROR },
      securitySchemes: Object.fromEntries(Object.values(SCHEMES).map((s) => [s.name, s.scheme])),
    },
  };
}
