export interface Store {
  get(key: string): string | undefined;
  set(key: string, value: string): void;
}

export abstract class Base {
  abstract load(): Promise<void>;

  protected ready = false;
}

declare function external(x: number): number;

module Legacy {
  export const version = 1;
}

export class MemoryStore extends Base implements Store {
  private items = new Map<string, string>();

  constructor() {
    super();
  }

  get(key: string) {
    return this.items.get(key);
  }
  set(key: string, value: string) {
    this.items.set(key, value);
  }

  async load() {}
}

export function create(): Store {
  return new MemoryStore();
}
