// Stores on a shared Redis (one server or a cluster) are told apart by their
// key prefix, so the store suites' Redis targets differ only in how a store
// is opened on a prefix. `create` opens one on a prefix no other test uses;
// `reopen` closes it and opens its prefix again (a restart); `twin` opens a
// second client on the same prefix (another replica).

interface Closable {
  close(): Promise<void>;
}

export interface PrefixedStores<S extends Closable> {
  create(): Promise<S>;
  reopen(store: S): Promise<S>;
  twin(store: S): Promise<S>;
}

export function prefixedStores<S extends Closable>(open: (prefix: string) => S): PrefixedStores<S> {
  const prefixes = new WeakMap<S, string>();
  let created = 0;
  const openAt = (prefix: string): S => {
    const store = open(prefix);
    prefixes.set(store, prefix);
    return store;
  };
  const prefixOf = (store: S): string => {
    const prefix = prefixes.get(store);
    if (!prefix) throw new Error("unknown store: not opened by these prefixed stores");
    return prefix;
  };
  return {
    async create() {
      created += 1;
      return openAt(`test:${process.pid}:${Date.now()}:${created}:`);
    },
    async reopen(store) {
      await store.close();
      return openAt(prefixOf(store));
    },
    async twin(store) {
      return openAt(prefixOf(store));
    },
  };
}
