/**
 * The owner's project settings (`PATCH /api/projects/{projectId}`): browser origins (origins.ts)
 * and automatic indexes (autoIndexes.ts). A body sets the fields it names and leaves the others.
 */
import { z } from 'zod';
import { allowedOriginsSchema } from './origins.js';

export const projectSettingsSchema = z
  .strictObject({
    allowedOrigins: allowedOriginsSchema.shape.allowedOrigins.optional(),
    autoIndexes: z.boolean().nullable().optional().meta({
      description:
        "Automatic indexes for the project's collections: true, false, or null for the server's default.",
    }),
  })
  .refine((body) => body.allowedOrigins !== undefined || body.autoIndexes !== undefined, {
    message: 'give allowedOrigins or autoIndexes',
  });

export type ProjectSettings = z.infer<typeof projectSettingsSchema>;
