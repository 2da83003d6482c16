/**
 * The answer bodies of collection schemas (`/_schema`, `/_openapi`) and the trash (`/_trash`),
 * declared beside their routes in routes/schemas.ts and routes/trash.ts.
 */
import { z } from 'zod';
import { collection, documentId, documentSchema, ns } from './components.js';

export const trashPath = z.object({ ns, collection, id: documentId });

export const violationSchema = z
  .object({ instancePath: z.string(), keyword: z.string(), message: z.string() })
  .meta({ id: 'SchemaViolation', description: 'One error of the validator (Ajv).' });

export const schemaViewSchema = z
  .object({
    schema: z.unknown().meta({ description: 'The JSON Schema (draft 2020-12) as set.' }),
    mode: z.enum(['enforce', 'warn']),
    revision: z.string().meta({ description: 'New on every PUT.' }),
    updatedAt: z.string().meta({ format: 'date-time' }),
  })
  .meta({ id: 'CollectionSchema' });

export const violationsPageSchema = z
  .object({
    data: z.array(z.object({ _id: z.string(), errors: z.array(violationSchema) })),
    meta: z.object({
      scanned: z.int().meta({ description: 'Documents read for this page (at most 1000).' }),
      hasMore: z.boolean(),
      next: z.string().nullable().meta({ description: 'Pass as `after` for the next page.' }),
    }),
  })
  .meta({ id: 'SchemaViolations' });

export const trashItemSchema = z
  .object({
    _id: z.string(),
    deletedAt: z.string().meta({ format: 'date-time' }),
    deletedBy: z.string().meta({ description: 'Hint of the key that deleted it.' }),
    expiresAt: z.string().meta({ format: 'date-time', description: 'Erased for good from then on.' }),
    version: z.int().min(1).meta({ description: 'The `$version` of its last version.' }),
    document: documentSchema,
  })
  .meta({ id: 'TrashItem' });

export const trashPageSchema = z
  .object({
    data: z.array(trashItemSchema),
    meta: z.object({
      limit: z.int(),
      hasMore: z.boolean(),
      next: z.string().nullable().meta({ description: 'Pass as `after` for the next page.' }),
    }),
  })
  .meta({ id: 'TrashPage' });
