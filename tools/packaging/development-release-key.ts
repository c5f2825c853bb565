/**
 * The development release key: what the executables the beds and benches build trust
 * (ensureExecutable), so a bed can sign the releases it ships. Its private half is here, in the
 * open, on purpose: a fleet's packages are made with the fleet's own keys (`npm run package
 * --release-keys`), and `npm run package` says so loudly when it is given this one.
 */
export const developmentReleaseKey = {
  publicKey: 'MCowBQYDK2VwAyEAQrpLMdEu86Op5cG3eyLBH/igIdj6Q2l9fBLuQAT5HTs=',
  privateKeyPem:
    '-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIAMEWlis/7TzTr4WTkAYUSxJLvyqba9L/9i+2tAqTBl9\n-----END PRIVATE KEY-----\n',
} as const;
