/** A client bound to one kind and its TypeScript type: `typed<VirtualMachine>(client, VirtualMachineType)`. */
import type {
  DeleteOptions,
  DeleteResult,
  KubeList,
  KubeObject,
  ListOptions,
  ObjectClient,
  PatchOptions,
  ResourceType,
  WatchEvent,
  WatchHandle,
  WatchOptions,
  WriteOptions,
} from './types';

/** `ObjectClient`'s calls for one kind (`type`), typed as `T`; made by {@link typed}. */
export interface TypedClient<T extends KubeObject> {
  readonly type: ResourceType;
  get(name: string, namespace?: string): Promise<T>;
  list(options?: ListOptions): Promise<KubeList<T>>;
  watch(options: WatchOptions, onEvent: (event: WatchEvent<T>) => void): Promise<WatchHandle>;
  create(object: T, options?: WriteOptions): Promise<T>;
  update(object: T, options?: WriteOptions): Promise<T>;
  updateStatus(object: T, options?: WriteOptions): Promise<T>;
  patch(name: string, patch: unknown, options: PatchOptions): Promise<T>;
  delete(name: string, options?: DeleteOptions): Promise<DeleteResult<T>>;
}

/** Binds `client` to `type`, so calls need no type argument and return `T`. */
export function typed<T extends KubeObject>(client: ObjectClient, type: ResourceType): TypedClient<T> {
  return {
    type,
    get: (name, namespace) => client.get<T>(type, name, namespace),
    list: (options) => client.list<T>(type, options),
    watch: (options, onEvent) => client.watch<T>(type, options, onEvent),
    create: (object, options) => client.create<T>(type, object, options),
    update: (object, options) => client.update<T>(type, object, options),
    updateStatus: (object, options) => client.updateStatus<T>(type, object, options),
    patch: (name, patch, options) => client.patch<T>(type, name, patch, options),
    delete: (name, options) => client.delete<T>(type, name, options),
  };
}
