/**
 * A throwaway PKI for TLS tests, made with the openssl command line in a temporary folder (no
 * private key is committed): a CA, a broker certificate for 127.0.0.1 / localhost signed by it,
 * and a client certificate signed by it, each valid for two days.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** PEM files, all in `dir`. */
export interface TestPki {
  readonly dir: string;
  /** The CA certificate clients trust (KAFKA_SSL_CA_LOCATION). */
  readonly caLocation: string;
  /** The broker's key followed by its certificate: the listener's PEM keystore. */
  readonly brokerKeystoreLocation: string;
  /** A client certificate and its unencrypted key (KAFKA_SSL_CERTIFICATE_LOCATION / _KEY_LOCATION). */
  readonly clientCertificateLocation: string;
  readonly clientKeyLocation: string;
  /** Deletes the folder. */
  remove(): void;
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A key and a certificate signed by the CA in `dir`, with the given X.509 v3 extensions. */
function signed(dir: string, name: string, subject: string, extensions: string): void {
  openssl(dir, [
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
    '-subj',
    subject,
  ]);
  writeFileSync(join(dir, `${name}.ext`), extensions);
  openssl(dir, [
    'x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
    '-days', '2', '-extfile', `${name}.ext`, '-out', `${name}.pem`,
  ]); // prettier-ignore
}

/** Makes the CA, broker and client certificates in a fresh temporary folder. */
export function makeTestPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'spa-pki-'));
  openssl(dir, [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2',
    '-subj', '/CN=spa-test-ca', '-addext', 'basicConstraints=critical,CA:TRUE',
    '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
  ]); // prettier-ignore
  signed(
    dir,
    'broker',
    '/CN=localhost',
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n',
  );
  signed(dir, 'client', '/CN=spa-trainer', 'extendedKeyUsage=clientAuth\n');
  const brokerKeystoreLocation = join(dir, 'broker-keystore.pem');
  writeFileSync(
    brokerKeystoreLocation,
    readFileSync(join(dir, 'broker.key'), 'utf8') + readFileSync(join(dir, 'broker.pem'), 'utf8'),
  );
  return {
    dir,
    caLocation: join(dir, 'ca.pem'),
    brokerKeystoreLocation,
    clientCertificateLocation: join(dir, 'client.pem'),
    clientKeyLocation: join(dir, 'client.key'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
