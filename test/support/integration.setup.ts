import { inject } from 'vitest';
import { useEndpoints } from './endpoints.ts';
import { enforceQuotasOnEveryClient } from './sdk-quotas.ts';

// Before any test module builds an SDK client, point the SDK at the run's emulators.
useEndpoints(inject('endpoints'));
// and hold every client to AWS's quotas, as the local runtime's clients are
enforceQuotasOnEveryClient();
