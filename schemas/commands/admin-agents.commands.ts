import * as v from 'valibot';
import {
  AdminAgentSchema,
  AgentListQuerySchema,
  AgentMetricsSchema,
  AgentQuerySchema,
  AgentUpdateSchema,
  AvatarRemovedSchema,
  AvatarSetSchema,
  LogLinesSchema,
  LogPollSchema,
  LogsPollQuerySchema,
  LogsQuerySchema,
  MetricsBucketSchema,
  MetricsQuerySchema,
  ProviderListingSchema,
} from '../admin-agents.schema.js';
import { defineCommand } from '../command.js';

/** The admin API's agent commands: each carries the principal, whose `allowed_agents` the handler applies. */
export const ADMIN_AGENT_COMMANDS = {
  list: defineCommand('admin.agents_list', AgentListQuerySchema, v.array(AdminAgentSchema)),
  get: defineCommand('admin.agent_get', AgentQuerySchema, AdminAgentSchema),
  update: defineCommand('admin.agent_update', AgentUpdateSchema, AdminAgentSchema),
  setAvatar: defineCommand('admin.agent_avatar_set', AvatarSetSchema, AdminAgentSchema),
  removeAvatar: defineCommand('admin.agent_avatar_remove', AgentQuerySchema, AvatarRemovedSchema),
  metrics: defineCommand('admin.agent_metrics', MetricsQuerySchema, AgentMetricsSchema),
  history: defineCommand('admin.agent_metrics_history', MetricsQuerySchema, v.array(MetricsBucketSchema)),
  logs: defineCommand('admin.logs_read', LogsQuerySchema, LogLinesSchema),
  pollLogs: defineCommand('admin.logs_poll', LogsPollQuerySchema, LogPollSchema),
  providers: defineCommand('admin.providers_list', AgentListQuerySchema, ProviderListingSchema),
} as const;
