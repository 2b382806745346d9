import { seg } from '../../api/client';

/** An agent's picture (the public avatar route), or its initial when it has none. */
export function Avatar({ name, has, version, large }: { name: string; has: boolean; version?: number; large?: boolean }) {
  const cls = `avatar ${large ? 'avatar-lg' : ''}`;
  if (!has) {
    return (
      <span class={`${cls} avatar-none`} aria-hidden="true">
        {name.slice(0, 1).toUpperCase()}
      </span>
    );
  }
  return <img class={cls} src={`/api/agents/${seg(name)}/avatar${version ? `?v=${version}` : ''}`} alt="" />;
}
