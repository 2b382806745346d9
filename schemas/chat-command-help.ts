/*
 * What `GET /api/commands` lists (WIRE.md §2): the chat commands every transport understands, as
 * machines/chat-command.logic.ts parses them (a test keeps the two lists equal), each with a line of help.
 */
export const CHAT_COMMAND_HELP: readonly { command: string; description: string }[] = [
  { command: '/new', description: 'Start a fresh conversation with the agent' },
  { command: '/reset', description: 'Same as /new' },
  { command: '/stop', description: 'Stop what the agent is doing in this chat' },
  { command: '/model', description: 'Show the model in use, or switch with /model <id>' },
  { command: '/retry', description: 'Ask again what a restart cut off' },
  { command: '/agent_restart', description: 'Restart a sub-agent: /agent_restart <name>' },
  { command: '/workflow', description: 'Workflows: /workflow list | runs | run <id> [--var name=value]... | status <run> | cancel <run>' },
];

/** Commands about the orchestration rather than the chat, as MULTIAGENT_COMMANDS lists them. */
export const MULTIAGENT_COMMAND_HELP: readonly { command: string; description: string }[] = [
  { command: '/tasks', description: 'Background tasks of this chat: running, waiting for an answer, finished' },
];
