// One version everywhere: package.json's is the release's, and the overlays' image tag, the image's version label and every image reference written out in deploy/ and README.md say the same.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import packageJson from '../../../package.json' with { type: 'json' };
import { PROJECT_ROOT } from '../../../support/start-gateway-process.ts';
import { labels, readDockerfile } from './dockerfile.ts';
import { KUBERNETES_DIR } from './kustomize.ts';

const VERSION = packageJson.version;
/** The image's name in the manifests (base/deployment.yaml), which the overlays' `images:` rename and tag. */
const IMAGE = 'petstore-gateway';

interface ImageSetting {
  name: string;
  newName?: string;
  newTag?: string;
  digest?: string;
}

const overlayNames = readdirSync(join(KUBERNETES_DIR, 'overlays')).sort();
const imageSettings = (overlay: string): ImageSetting[] =>
  (parseYaml(readFileSync(join(KUBERNETES_DIR, 'overlays', overlay, 'kustomization.yaml'), 'utf8')) as { images?: ImageSetting[] }).images ?? [];

/** `name:version` references to the image, by the names it goes by, with the version they give. */
function imageReferences(text: string, names: readonly string[]): Array<{ reference: string; version: string }> {
  const escaped = names.map((name) => name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'));
  // A version is digits first (so `petstore-gateway:{keys}` and `petstore-gateway: could not start` are not references).
  const pattern = new RegExp(`(?<![\\w./-])(?:${escaped.join('|')}):(v?\\d+(?:\\.\\d+)*(?:-[0-9A-Za-z.-]*[0-9A-Za-z])?(?:\\+[0-9A-Za-z.-]*[0-9A-Za-z])?)`, 'g');
  return [...text.matchAll(pattern)].map((match) => ({ reference: match[0], version: match[1]! }));
}

/** Every file under a directory, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
}

describe("the release version, package.json's", () => {
  it('is a semantic version', () => {
    expect(VERSION).toMatch(/^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/);
  });

  it.each(overlayNames)('is the image tag overlays/%s runs', (overlay) => {
    const settings = imageSettings(overlay).filter((setting) => setting.name === IMAGE);
    expect(settings, `overlays/${overlay}/kustomization.yaml should set the tag of ${IMAGE} once, in images:`).toHaveLength(1);
    expect(settings[0]!.newTag, `overlays/${overlay}/kustomization.yaml: images: newTag`).toBe(VERSION);
  });

  it("is the image's org.opencontainers.image.version label (deploy/Dockerfile)", () => {
    expect(labels(readDockerfile().at(-1)!)['org.opencontainers.image.version']).toBe(VERSION);
  });

  it('is the version of every image reference in deploy/ (the base names the image without one)', () => {
    const names = [IMAGE, ...new Set(overlayNames.flatMap(imageSettings).flatMap((setting) => (setting.newName ? [setting.newName] : [])))];
    const found = filesUnder(join(PROJECT_ROOT, 'deploy')).flatMap((file) =>
      imageReferences(readFileSync(file, 'utf8'), names).map(({ reference, version }) => ({ where: `${relative(PROJECT_ROOT, file)}: ${reference}`, version })),
    );
    expect(found.length, "the Dockerfile's build command names the image with its version").toBeGreaterThan(0);
    for (const { where, version } of found) expect(version, where).toBe(VERSION);
  });

  it('is the version of every image reference in README.md and docs/', () => {
    const names = [IMAGE, ...new Set(overlayNames.flatMap(imageSettings).flatMap((setting) => (setting.newName ? [setting.newName] : [])))];
    const documents = [join(PROJECT_ROOT, 'README.md'), ...filesUnder(join(PROJECT_ROOT, 'docs'))];
    const found = documents.flatMap((file) =>
      imageReferences(readFileSync(file, 'utf8'), names).map(({ reference, version }) => ({ where: `${relative(PROJECT_ROOT, file)}: ${reference}`, version })),
    );
    expect(found.length, 'docs/kubernetes.md builds the image with its version').toBeGreaterThan(0);
    for (const { where, version } of found) expect(version, where).toBe(VERSION);
  });
});
