import { generateKeyPairSync, randomBytes } from 'node:crypto';
import forge from 'node-forge';

/** A certificate authority made for one rehearsal, and the server certificate it signed. */
export type RehearsalCertificate = {
  /** What a client must trust: the rehearsal's own CA, standing in for the public CAs AWS's endpoints chain to. */
  readonly caPem: string;
  readonly certPem: string;
  readonly keyPem: string;
};

const day = 24 * 60 * 60 * 1000;

function keyPair() {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return {
    privatePem: privateKey,
    privateKey: forge.pki.privateKeyFromPem(privateKey),
    publicKey: forge.pki.publicKeyFromPem(publicKey),
  };
}

/**
 * A random positive serial, as hex, whose DER INTEGER is minimal: its first byte is neither zero
 * nor above 0x7f. OpenSSL refuses a certificate whose serial starts with a needless zero byte
 * ("illegal padding"), and a CA it cannot read leaves the server certificate unverifiable.
 */
export function serialNumberOf(random: Uint8Array): string {
  const bytes = Buffer.from(random);
  bytes[0] = (bytes[0] ?? 0) & 0x7f || 0x01;
  return bytes.toString('hex');
}

function certificate(
  subject: string,
  publicKey: forge.pki.PublicKey,
  extensions: ReadonlyArray<Record<string, unknown>>,
): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = publicKey;
  cert.serialNumber = serialNumberOf(randomBytes(16));
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + day);
  cert.setSubject([{ name: 'commonName', value: subject }]);
  cert.setExtensions([...extensions]);
  return cert;
}

/**
 * A fresh CA and a server certificate for `names`, kept in memory and valid for a day: the
 * HTTPS names of the rehearsal's AWS (the IoT data endpoint, CloudFormation's response URLs),
 * which clients reach with TLS verified, as on AWS.
 */
export function rehearsalCertificate(names: readonly string[]): RehearsalCertificate {
  const caKeys = keyPair();
  const ca = certificate('Mesh rehearsal CA', caKeys.publicKey, [
    { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  ca.setIssuer(ca.subject.attributes);
  ca.sign(caKeys.privateKey, forge.md.sha256.create());

  const serverKeys = keyPair();
  const server = certificate(names[0] ?? 'aws.localhost', serverKeys.publicKey, [
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    { name: 'subjectAltName', altNames: names.map((value) => ({ type: 2, value })) },
  ]);
  server.setIssuer(ca.subject.attributes);
  server.sign(caKeys.privateKey, forge.md.sha256.create());
  return {
    caPem: forge.pki.certificateToPem(ca),
    certPem: forge.pki.certificateToPem(server),
    keyPem: serverKeys.privatePem,
  };
}
