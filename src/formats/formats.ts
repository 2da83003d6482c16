/**
 * The three interchange formats of import and export, their media types and file extensions.
 * Shared by the HTTP routes and the `folio` CLI, so both name formats the same way.
 */
export const FORMATS = ['json', 'csv', 'ndjson'] as const;
export type TransferFormat = (typeof FORMATS)[number];

export const MEDIA_TYPES: Readonly<Record<TransferFormat, string>> = {
  json: 'application/json',
  csv: 'text/csv',
  ndjson: 'application/x-ndjson',
};

const EXTENSIONS: ReadonlyArray<[string, TransferFormat]> = [
  ['.json', 'json'],
  ['.csv', 'csv'],
  ['.ndjson', 'ndjson'],
  ['.jsonl', 'ndjson'],
];

export function isTransferFormat(value: string): value is TransferFormat {
  return (FORMATS as readonly string[]).includes(value);
}

/** `people.csv` → csv; undefined when the extension says nothing. */
export function formatOfFileName(name: string): TransferFormat | undefined {
  const lower = name.toLowerCase();
  return EXTENSIONS.find(([extension]) => lower.endsWith(extension))?.[1];
}

/** The file extension an export in `format` is saved under. */
export function fileExtension(format: TransferFormat): string {
  return format === 'ndjson' ? '.ndjson' : `.${format}`;
}
