/**
 * The kinds an embedded store serves: by REST path (`group/version/plural`), by storage
 * kind (`group/Kind`), and the names built-in kinds reserve so that no CRD takes them over.
 */
import { NotFoundError } from '../errors';
import type { ResourceType } from '../types';
import { storageKind } from './store-rules';

export class TypeRegistry {
  private readonly byPath = new Map<string, ResourceType>();
  private readonly byKind = new Map<string, ResourceType>();
  /** `group/plural` and `group/Kind` of the kinds served without a CRD. */
  private readonly reserved = new Set<string>();

  /** `onNewKind` hears each storage kind registered (the object index makes room for it). */
  constructor(private readonly onNewKind: (kind: string) => void) {}

  /** Makes a kind known; the first version registered for a storage kind is its stored one. */
  register(type: ResourceType): void {
    this.byPath.set(`${type.group}/${type.version}/${type.plural}`, type);
    if (!this.byKind.has(storageKind(type))) this.byKind.set(storageKind(type), type);
    this.onNewKind(storageKind(type));
  }

  /** Registers a built-in kind and reserves its plural and kind. */
  registerBuiltin(type: ResourceType): void {
    this.register(type);
    this.reserved.add(`${type.group}/${type.plural}`).add(`${type.group}/${type.kind}`);
  }

  /** True when a built-in kind already uses `type`'s plural or kind in its group. */
  isReserved(type: ResourceType): boolean {
    return (
      this.reserved.has(`${type.group}/${type.plural}`) || this.reserved.has(`${type.group}/${type.kind}`)
    );
  }

  /** The kind served at `group/version/plural`, if known. */
  resolve(group: string, version: string, plural: string): ResourceType | undefined {
    return this.byPath.get(`${group}/${version}/${plural}`);
  }

  /** The type stored under a storage kind. */
  ofKind(kind: string): ResourceType | undefined {
    return this.byKind.get(kind);
  }

  /** Every known kind (each served version). */
  all(): ResourceType[] {
    return [...this.byPath.values()];
  }

  /** The storage kind of `type`; 404 when it is not served (a CRD not created yet). */
  kindOf(type: ResourceType): string {
    if (!this.byPath.has(`${type.group}/${type.version}/${type.plural}`)) {
      throw new NotFoundError(
        404,
        'NotFound',
        `the server could not find the requested resource (${type.plural}.${type.group || 'core'}/${type.version}); create its CustomResourceDefinition first`,
      );
    }
    return storageKind(type);
  }
}
