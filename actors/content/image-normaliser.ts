import { rename, rm } from 'node:fs/promises';
import { extname } from 'node:path';
import sharp from 'sharp';
import type { ImageConfig } from '../../schemas/index.js';

export interface NormalisedImage {
  path: string;
  width: number;
  height: number;
  format: ImageConfig['output_format'];
}

/**
 * An incoming image as the agents get it on every transport (SPEC.md ImageConfig): turned upright
 * by its EXIF orientation, no side longer than `max_dimension`, re-encoded as `output_format` at
 * `quality` — which also drops the metadata (location, camera) a phone photo carries. The original
 * is replaced by the result. Anything sharp cannot read is an error for the caller to report.
 */
export async function normaliseImage(path: string, cfg: ImageConfig): Promise<NormalisedImage> {
  const ext = cfg.output_format === 'jpeg' ? '.jpg' : `.${cfg.output_format}`;
  const out = path.slice(0, path.length - extname(path).length) + ext;
  const target = out === path ? `${path}.normalised${ext}` : out;
  const pipeline = sharp(path, { failOn: 'error' })
    .rotate()
    .resize({ width: cfg.max_dimension, height: cfg.max_dimension, fit: 'inside', withoutEnlargement: true });
  const encoded =
    cfg.output_format === 'png' ? pipeline.png() : cfg.output_format === 'jpeg' ? pipeline.jpeg({ quality: cfg.quality, mozjpeg: true }) : pipeline.webp({ quality: cfg.quality });
  const info = await encoded.toFile(target);
  await rm(path, { force: true });
  if (target !== out) await rename(target, out);
  return { path: out, width: info.width, height: info.height, format: cfg.output_format };
}
