/**
 * CSV text → records, fed chunk by chunk, in time linear in the text: every character is looked
 * at once, whatever the chunking and however long a field. (papaparse's stream reader, used
 * before, parses a record that spans chunks again from its start on every chunk, so one long
 * quoted field cost the square of its length; its whole-string parser is still the reference
 * this one is tested against, see test/formats/csvTokenizer.test.ts.)
 *
 * The dialect is papaparse's, which Folio has always read:
 * - `,` between fields; the line ending is the first one met outside quotes (`\r\n`, `\n` or `\r`);
 *   another line ending outside quotes is text;
 * - a field starting with `"` is quoted: `""` inside is one quote, and a `"` followed (after
 *   optional whitespace) by `,`, the line ending or the end of the text closes it; any other `"`
 *   inside is text;
 * - a `"` inside an unquoted field is text.
 *
 * What papaparse's stream reader did silently, this reports as a problem record, and reading
 * goes on: a quoted field never closed (which swallows the rest of the text: it can only be the
 * last record), and a record longer than `maxRecordChars` (not kept in memory: only its line and
 * that it was too long).
 */

/** One CSV record: its cells as written and the line it starts on (1-based), or why it has none. */
export type CsvRecord =
  | { line: number; cells: string[]; problem?: undefined }
  | { line: number; cells?: undefined; problem: 'unterminated_quote' | 'too_large'; message: string };

type Newline = '\n' | '\r\n' | '\r';

enum State {
  /** At the start of a field. */
  FieldStart,
  /** In an unquoted field. */
  Plain,
  /** In a quoted field. */
  Quoted,
  /** Just after a `"` in a quoted field: an escaped quote, a closing quote, or text. */
  Quote,
  /** After a `"` in a quoted field and whitespace: closing if a `,` or line ending follows. */
  QuoteSpace,
  /** After a `\r` outside quotes that may begin a `\r\n` line ending. */
  CarriageReturn,
}

const QUOTE = 0x22;
const COMMA = 0x2c;
const LF = 0x0a;
const CR = 0x0d;

/** Whitespace papaparse allows between a closing quote and what follows it. */
function isSpace(code: number): boolean {
  return String.fromCharCode(code).trim() === '';
}

export class CsvTokenizer {
  readonly #maxRecordChars: number;
  #newline: Newline | null = null;
  #state = State.FieldStart;
  /** The state a `\r` interrupted (Plain or FieldStart, or QuoteSpace after a quote). */
  #beforeCr = State.Plain;
  #cells: string[] = [];
  #field = '';
  /** Text after a `"` in a quoted field, held until it is known whether the quote closed it. */
  #held = '';
  #recordChars = 0;
  #tooLarge = false;
  /** 1-based line of the next character; a line break is `\r\n`, `\n` or a lone `\r`. */
  #line = 1;
  #lastWasCr = false;
  #recordLine = 1;
  /** Whether a record has begun (its first character was read) and not yet ended. */
  #inRecord = false;
  #quoteLine = 1;
  #out: CsvRecord[] = [];
  #examined = 0;
  /** Where the next `\n` and `\r` of the chunk being read are (-1: none; -2: not searched yet). */
  #nextLf = -2;
  #nextCr = -2;

  constructor(maxRecordChars = Number.POSITIVE_INFINITY) {
    this.#maxRecordChars = maxRecordChars;
  }

  /**
   * Characters looked at so far, counting a jump to the next quote as the characters it passes:
   * the text's length exactly, whatever the chunking (what makes the cost linear; tested).
   */
  get charsExamined(): number {
    return this.#examined;
  }

  /** The line ending in use, once one was met outside quotes. */
  get newline(): Newline | null {
    return this.#newline;
  }

  /** The records completed by `text`. */
  push(text: string): CsvRecord[] {
    this.#nextLf = -2;
    this.#nextCr = -2;
    let i = 0;
    while (i < text.length) {
      if (!this.#inRecord) {
        this.#inRecord = true;
        this.#recordLine = this.#line;
      }
      i = this.#step(text, i);
    }
    return this.#out.splice(0);
  }

  /** Reads at `i` in the current state; where reading goes on (a change of state reads nothing). */
  #step(text: string, i: number): number {
    const code = text.charCodeAt(i);
    switch (this.#state) {
      case State.FieldStart:
        if (code !== QUOTE) {
          this.#state = State.Plain;
          return i;
        }
        this.#quoteLine = this.#line;
        this.#state = State.Quoted;
        return this.#take(code, i);
      case State.Plain:
        return this.#plain(text, i, code);
      case State.Quoted:
        return this.#quoted(text, i);
      case State.Quote:
        if (code === QUOTE) {
          // `""`: one quote of text.
          this.#appendText('"');
          this.#state = State.Quoted;
          return this.#take(code, i);
        }
        this.#held = '"';
        this.#state = State.QuoteSpace;
        return i;
      case State.QuoteSpace:
        return this.#afterQuote(text, i, code);
      case State.CarriageReturn:
        if (code !== LF) {
          this.#loneCarriageReturn();
          return i;
        }
        this.#newline ??= '\r\n';
        this.#endRecord();
        return this.#take(code, i);
    }
  }

  /** Counts the character at `i` as read; the index after it. */
  #take(code: number, i: number): number {
    this.#consume(code);
    return i + 1;
  }

  /** In an unquoted field: ordinary text up to the next comma or line break, in one slice. */
  #plain(text: string, i: number, code: number): number {
    let end = i;
    while (end < text.length) {
      const c = text.charCodeAt(end);
      if (c === COMMA || c === LF || c === CR) break;
      end += 1;
    }
    if (end > i) {
      this.#examined += end - i;
      this.#append(text, i, end);
      this.#lastWasCr = false;
      return end;
    }
    if (code === COMMA) {
      this.#endField(true);
      this.#state = State.FieldStart;
    } else if (!this.#lineEndingStarts(code, State.Plain)) {
      // A line break that is not the line ending: text.
      this.#appendText(String.fromCharCode(code));
    }
    return this.#take(code, i);
  }

  /** In a quoted field: text up to the next quote, in one slice. */
  #quoted(text: string, i: number): number {
    const close = text.indexOf('"', i);
    const end = close === -1 ? text.length : close;
    this.#countLines(text, i, end);
    this.#append(text, i, end);
    if (close === -1) return end;
    this.#state = State.Quote;
    return this.#take(QUOTE, end);
  }

  /** After a quote in a quoted field and any whitespace: a comma or the line ending closes it. */
  #afterQuote(text: string, i: number, code: number): number {
    if (code === COMMA) {
      this.#held = '';
      this.#endField(true);
      this.#state = State.FieldStart;
      return this.#take(code, i);
    }
    if ((code === LF || code === CR) && this.#lineEndingStarts(code, State.QuoteSpace))
      return this.#take(code, i);
    if (isSpace(code)) {
      this.#held += text[i];
      return this.#take(code, i);
    }
    // Not a closing quote after all: the quote and the whitespace are text.
    this.#appendText(this.#held);
    this.#held = '';
    this.#state = State.Quoted;
    return i;
  }

  /** The records left when the text ends, a never-closed quoted field included. */
  end(): CsvRecord[] {
    if (this.#state === State.CarriageReturn) this.#loneCarriageReturn();
    switch (this.#state) {
      case State.Quoted:
        this.#out.push({
          line: this.#recordLine,
          problem: 'unterminated_quote',
          message:
            `The quoted field opened on line ${this.#quoteLine} is never closed, so the rest of the body ` +
            `(to line ${this.#line}) was read as one field and no rows after it were read. ` +
            'Close the quote, or write a quote inside a field as "".',
        });
        break;
      case State.Quote:
      case State.QuoteSpace:
        // A quote at the very end (then whitespace) closes its field.
        this.#held = '';
        this.#endRecord();
        break;
      default:
        if (this.#inRecord) this.#endRecord();
    }
    this.#state = State.FieldStart;
    return this.#out.splice(0);
  }

  /**
   * `code` (a line break outside quotes) met in `from`: whether it starts the line ending. On
   * `\r` with `\r\n` possible, that is known from the next character (State.CarriageReturn).
   */
  #lineEndingStarts(code: number, from: State): boolean {
    if (code === LF) {
      this.#newline ??= '\n';
      if (this.#newline !== '\n') return from === State.QuoteSpace ? this.#space(code) : false;
      this.#endRecord();
      return true;
    }
    if (this.#newline === '\r') {
      this.#endRecord();
      return true;
    }
    if (this.#newline === '\n') return from === State.QuoteSpace ? this.#space(code) : false;
    this.#beforeCr = from;
    this.#state = State.CarriageReturn;
    return true;
  }

  /** A line break after a closing quote that is not the line ending: whitespace, held. */
  #space(code: number): boolean {
    this.#held += String.fromCharCode(code);
    return true;
  }

  /** The `\r` before a character other than `\n`. */
  #loneCarriageReturn(): void {
    if (this.#newline === null) {
      this.#newline = '\r';
      this.#endRecord();
    } else if (this.#beforeCr === State.QuoteSpace) {
      this.#held += '\r';
      this.#state = State.QuoteSpace;
    } else {
      this.#appendText('\r');
      this.#state = State.Plain;
    }
  }

  #consume(code: number): void {
    this.#examined += 1;
    if (code === CR) this.#line += 1;
    else if (code === LF && !this.#lastWasCr) this.#line += 1;
    this.#lastWasCr = code === CR;
  }

  /**
   * Counts the line breaks of `text` from `from` to `to` (a run of a quoted field). The next
   * `\n` and `\r` are found with indexOf and remembered, so each search starts past the last
   * one: however many runs a chunk is cut into, it is searched once.
   */
  #countLines(text: string, from: number, to: number): void {
    this.#examined += to - from;
    if (to <= from) return;
    if (this.#nextLf !== -1 && this.#nextLf < from) this.#nextLf = text.indexOf('\n', from);
    while (this.#nextLf !== -1 && this.#nextLf < to) {
      const at = this.#nextLf;
      // `\r\n` is one line break, counted at its `\r`.
      if (!(at === from ? this.#lastWasCr : text.charCodeAt(at - 1) === CR)) this.#line += 1;
      this.#nextLf = text.indexOf('\n', at + 1);
    }
    if (this.#nextCr !== -1 && this.#nextCr < from) this.#nextCr = text.indexOf('\r', from);
    while (this.#nextCr !== -1 && this.#nextCr < to) {
      this.#line += 1;
      this.#nextCr = text.indexOf('\r', this.#nextCr + 1);
    }
    this.#lastWasCr = text.charCodeAt(to - 1) === CR;
  }

  #append(text: string, from: number, to: number): void {
    if (to > from) this.#appendText(from === 0 && to === text.length ? text : text.slice(from, to));
  }

  #appendText(piece: string): void {
    if (this.#grow(piece.length)) this.#field += piece;
  }

  /** Counts `chars` more of the record; false once it is over the limit (nothing more is kept). */
  #grow(chars: number): boolean {
    this.#recordChars += chars;
    if (this.#tooLarge) return false;
    if (this.#recordChars > this.#maxRecordChars) {
      // Over the limit: drop what was read of the record and keep only that it was too long.
      this.#tooLarge = true;
      this.#cells = [];
      this.#field = '';
      return false;
    }
    return true;
  }

  /** Ends a field; the comma after it counts as a character of the record, a line ending not. */
  #endField(comma: boolean): void {
    if (this.#grow(comma ? 1 : 0)) this.#cells.push(this.#field);
    this.#field = '';
  }

  #endRecord(): void {
    this.#endField(false);
    if (this.#tooLarge) {
      this.#out.push({
        line: this.#recordLine,
        problem: 'too_large',
        message: `The row is over ${this.#maxRecordChars} characters (its cells and commas).`,
      });
    } else this.#out.push({ line: this.#recordLine, cells: this.#cells });
    this.#cells = [];
    this.#held = '';
    this.#recordChars = 0;
    this.#tooLarge = false;
    this.#state = State.FieldStart;
    this.#inRecord = false;
  }
}
