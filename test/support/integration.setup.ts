import { inject } from 'vitest';
import { useEndpoints } from './endpoints.ts';

// Before any test module builds an SDK client, point the SDK at the run's emulators.
useEndpoints(inject('endpoints'));
