import { apiDocumentHandler } from '../lib/server/api/handlers/api-document.ts';

export const handler = apiDocumentHandler();
