import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import forge from 'node-forge';
import { describe, expect, it } from 'vitest';
import { rehearsalCertificate, serialNumberOf } from '../../../tools/rehearsal/tls-certificate.ts';

const { privateKey, publicKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});

/** A self-signed certificate with `serialHex`, loaded by OpenSSL as an HTTPS server loads its own. */
function readBySsl(serialHex: string): X509Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKey);
  cert.serialNumber = serialHex;
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 60_000);
  cert.setSubject([{ name: 'commonName', value: 'serial' }]);
  cert.setIssuer([{ name: 'commonName', value: 'serial' }]);
  cert.sign(forge.pki.privateKeyFromPem(privateKey), forge.md.sha256.create());
  const pem = forge.pki.certificateToPem(cert);
  createSecureContext({ cert: pem, key: privateKey });
  return new X509Certificate(pem);
}

describe('the rehearsal’s certificates', () => {
  it.each([0x00, 0x01, 0x0f, 0x7f, 0x80, 0xff])(
    'give a serial OpenSSL reads when the random bytes start %i',
    (first) => {
      // a second byte under 0x80: forge keeps one leading zero of a zero-led serial, which OpenSSL calls illegal padding
      const random = Buffer.alloc(16, 0x11);
      random[0] = first;
      const serial = serialNumberOf(random);

      expect(serial).toMatch(/^(0[1-9a-f]|[1-7][0-9a-f])[0-9a-f]{30}$/);
      expect(readBySsl(serial).serialNumber.toLowerCase()).toBe(serial);
    },
  );

  it('are a CA Node trusts and a server certificate it signed for the names asked', () => {
    const { caPem, certPem } = rehearsalCertificate(['iot.aws.localhost', 'cloudformation.aws.localhost']);
    const ca = new X509Certificate(caPem);
    const server = new X509Certificate(certPem);

    expect(ca.ca).toBe(true);
    expect(server.verify(ca.publicKey)).toBe(true);
    expect(server.checkHost('cloudformation.aws.localhost')).toBe('cloudformation.aws.localhost');
  });
});
