/**
 * Reading JSON off the wire into typed records, field by field, with errors that name the field.
 *
 * The same rules as the Python reader (`oplens.records.run.from_dict`): unknown keys are ignored (a
 * newer server's extra fields), an optional field that is absent (or null) takes its default, and a
 * missing or mistyped required field is a `RunParseError` naming its path (`lines[0].self_device_us`),
 * never a half-built record that fails later in the heat gutter or the panel.
 *
 * The records' readers (`generated/run.ts`) are generated from the Python dataclasses with these;
 * hand-written readers of other answers (`src/diff/parseDiff.ts`, `src/doctor/doctor.ts`) use them too.
 */

export class RunParseError extends Error {
  constructor(
    readonly path: string,
    problem: string,
  ) {
    super(`OpLens result: ${path} ${problem}`);
    this.name = 'RunParseError';
  }
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Guards for the values of a free-form map (`Reader.record`): entries that fail one are dropped. */
export const isJson = (v: unknown): v is unknown => v !== undefined;
export const isNumber = (v: unknown): v is number => typeof v === 'number';
export const isString = (v: unknown): v is string => typeof v === 'string';
export const isBoolean = (v: unknown): v is boolean => typeof v === 'boolean';

/** A reader over one JSON object that knows where it is, for error messages. */
export class Reader {
  constructor(
    private readonly o: Obj,
    private readonly at: string,
  ) {}

  static of(v: unknown, at: string): Reader {
    if (!isObj(v)) {
      throw new RunParseError(at, 'is not an object');
    }
    return new Reader(v, at);
  }

  where(key: string): string {
    return this.at ? `${this.at}.${key}` : key;
  }

  /** Whether the object has `key` at all (null included). */
  present(key: string): boolean {
    return key in this.o;
  }

  /** Whether `key` has a value (neither absent nor null). */
  has(key: string): boolean {
    return this.o[key] !== undefined && this.o[key] !== null;
  }

  /** Whether `key` is there and null (a required field that may be null). */
  isNull(key: string): boolean {
    return this.o[key] === null;
  }

  private missing(key: string): never {
    throw new RunParseError(this.where(key), 'is missing');
  }

  num(key: string, fallback?: number): number {
    const v = this.o[key];
    if (v === undefined || v === null) {
      return fallback ?? this.missing(key);
    }
    if (typeof v !== 'number' || Number.isNaN(v)) {
      throw new RunParseError(this.where(key), `should be a number, not ${JSON.stringify(v)}`);
    }
    return v;
  }

  str(key: string, fallback?: string): string {
    const v = this.o[key];
    if (v === undefined || v === null) {
      return fallback ?? this.missing(key);
    }
    if (typeof v !== 'string') {
      throw new RunParseError(this.where(key), `should be a string, not ${JSON.stringify(v)}`);
    }
    return v;
  }

  bool(key: string, fallback?: boolean): boolean {
    const v = this.o[key];
    if (v === undefined || v === null) {
      return fallback ?? this.missing(key);
    }
    if (typeof v !== 'boolean') {
      throw new RunParseError(this.where(key), `should be true or false, not ${JSON.stringify(v)}`);
    }
    return v;
  }

  /** A string that must be one of `allowed`. */
  oneOf<T extends string>(key: string, allowed: readonly T[], fallback?: T): T {
    const v = this.str(key, fallback);
    if (!(allowed as readonly string[]).includes(v)) {
      throw new RunParseError(this.where(key), `should be one of ${allowed.join(', ')}, not ${JSON.stringify(v)}`);
    }
    return v as T;
  }

  obj<T>(key: string, read: (r: Reader) => T, fallback?: () => T): T {
    const v = this.o[key];
    if (v === undefined || v === null) {
      return fallback !== undefined ? fallback() : this.missing(key);
    }
    return read(Reader.of(v, this.where(key)));
  }

  /** A record that takes its own defaults where absent (what `read` makes of an empty object). */
  objOrDefaults<T>(key: string, read: (r: Reader) => T): T {
    return this.obj(key, read, () => read(Reader.of({}, this.where(key))));
  }

  list<T>(key: string, read: (r: Reader) => T, optional = true): T[] {
    const v = this.o[key];
    if (v === undefined || v === null) {
      return optional ? [] : this.missing(key);
    }
    if (!Array.isArray(v)) {
      throw new RunParseError(this.where(key), 'should be a list');
    }
    return v.map((item, i) => read(Reader.of(item, `${this.where(key)}[${i}]`)));
  }

  strings(key: string, optional = true): string[] {
    return this.scalars(key, isString, 'a list of strings', optional);
  }

  numbers(key: string, optional = true): number[] {
    return this.scalars(key, isNumber, 'a list of numbers', optional);
  }

  private scalars<T>(key: string, keep: (v: unknown) => v is T, what: string, optional: boolean): T[] {
    const v = this.o[key];
    if (v === undefined || v === null) {
      return optional ? [] : this.missing(key);
    }
    if (!Array.isArray(v) || !v.every(keep)) {
      throw new RunParseError(this.where(key), `should be ${what}`);
    }
    return v;
  }

  /** A free-form map: the entries whose value passes `keep` (the others are dropped). */
  record<T>(key: string, keep: (v: unknown) => v is T, optional = true): Record<string, T> {
    const v = this.o[key];
    if ((v === undefined || v === null) && !optional) {
      this.missing(key);
    }
    const out: Record<string, T> = {};
    if (isObj(v)) {
      for (const [k, item] of Object.entries(v)) {
        if (keep(item)) {
          out[k] = item;
        }
      }
    }
    return out;
  }
}
