import { adminChatTransport, startChatDelivery, startChatSessions, startTranscriber } from '../../actors/index.js';
import { TransportRegistry } from '../../bus/index.js';
import { chatSessionReadModel } from '../../store/index.js';
import { part } from '../subsystems.js';
import { BUS, CONFIG, EVENT_LOG, HOST_ENV, PATHS, REGISTRY, TRANSPORTS } from './keys.js';

/* Chats: delivery to whichever transport holds a chat, the chat sessions, voice transcription. */

export const chatDelivery = part({
  name: 'chat-delivery',
  needs: { bus: BUS },
  provides: { transports: TRANSPORTS },
  start({ bus }) {
    const transports = new TransportRegistry();
    const removeAdmin = transports.add(adminChatTransport(bus));
    const delivery = startChatDelivery({ bus, transports });
    return {
      provide: { transports },
      stop: () => {
        delivery.unsubscribe();
        removeAdmin();
      },
    };
  },
});

export const chatSessions = part({
  name: 'chat-sessions',
  needs: { bus: BUS, log: EVENT_LOG, paths: PATHS, registry: REGISTRY },
  start({ bus, log, paths, registry }) {
    const chatSessions = startChatSessions({ bus, readModel: chatSessionReadModel(log.projectionDb()), paths, registry: () => registry() });
    return () => chatSessions.unsubscribe();
  },
});

export const transcription = part({
  name: 'transcription',
  needs: { bus: BUS, paths: PATHS, config: CONFIG, host: HOST_ENV },
  start({ bus, paths, config, host }) {
    const transcriber = startTranscriber({ bus, paths, config: () => config().transcription, env: host.env });
    return () => transcriber.unsubscribe();
  },
});
