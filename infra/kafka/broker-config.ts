/**
 * Where a local broker instance lives (ports, folders) and the server.properties it runs with:
 * a combined KRaft broker/controller bound to 127.0.0.1 only, alone or one node of a local
 * cluster whose every node is a voter of the controller quorum (infra/kafka/cluster.ts).
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { clusterReplication } from '../../schemas/topics.js';
import { kafkaInfraDir } from './jars.js';

/** One voter of the KRaft controller quorum: its node id and controller port on 127.0.0.1. */
interface QuorumVoter {
  readonly id: number;
  readonly controllerPort: number;
}

/** A SCRAM user written into the cluster's bootstrap metadata when storage is formatted. */
export interface ScramUser {
  readonly username: string;
  readonly password: string;
  /** Defaults to SCRAM-SHA-256. */
  readonly mechanism?: 'SCRAM-SHA-256' | 'SCRAM-SHA-512';
}

/**
 * A TLS client listener (Kafka's SSL protocol), configured with PEM files as Kafka reads them
 * (KIP-651: `ssl.keystore.type=PEM`), so no Java keystore has to be built.
 */
interface BrokerSslListener {
  /** Its port on 127.0.0.1. */
  readonly port: number;
  /**
   * One PEM file holding the broker's private key (PKCS#8, unencrypted) followed by its
   * certificate chain (`ssl.keystore.location`). The certificate must name 127.0.0.1 (or the
   * host clients dial) in its subjectAltName: clients check it.
   */
  readonly keystoreLocation: string;
  /**
   * PEM file of the CA certificates that sign client certificates (`ssl.truststore.location`).
   * With it, a client certificate is asked for and checked when the client has one
   * (`ssl.client.auth=requested`); a client without one still connects. Without it, none is asked for.
   */
  readonly truststoreLocation?: string;
}

/** What a caller may choose about a local broker instance; everything has a default. */
export interface BrokerInstanceOptions {
  /** Instance name: data lives in `infra/kafka/data/<name>`. Default `default`. */
  readonly name?: string;
  /** PLAINTEXT client port. Default 9092. */
  readonly port?: number;
  /** KRaft controller port. Default `port + 1`. */
  readonly controllerPort?: number;
  /** When set, a SASL_PLAINTEXT (SCRAM) client listener on this port. */
  readonly saslPort?: number;
  /** SCRAM users created when the storage is formatted (first start of a fresh data dir). */
  readonly scramUsers?: readonly ScramUser[];
  /** When set, a TLS (SSL) client listener. */
  readonly ssl?: BrokerSslListener;
  /** Root of instance data dirs. Default `infra/kafka/data`. */
  readonly dataRoot?: string;
  /** KRaft node id. Default 1. */
  readonly nodeId?: number;
  /** The controller quorum this node is a voter of. Default: this node alone. */
  readonly quorum?: readonly QuorumVoter[];
}

/** The resolved layout of one instance: every port and path it uses. */
export interface BrokerInstance {
  readonly name: string;
  readonly host: '127.0.0.1';
  readonly port: number;
  readonly controllerPort: number;
  readonly saslPort: number | undefined;
  readonly scramUsers: readonly ScramUser[];
  readonly ssl: BrokerSslListener | undefined;
  readonly nodeId: number;
  /** Every voter of the controller quorum, this node included. */
  readonly quorum: readonly QuorumVoter[];
  readonly dataDir: string;
  /** Kafka's log.dirs (the records and the KRaft metadata log). */
  readonly logDir: string;
  readonly propertiesFile: string;
  readonly pidFile: string;
  /** JVM stdout/stderr (startup failures land here). */
  readonly consoleFile: string;
  /** log4j's server.log. */
  readonly serverLogFile: string;
}

function checkPort(field: string, value: number): number {
  if (!Number.isInteger(value) || value < 1 || value > 65535)
    throw new Error(`broker option ${field}=${value} is not a TCP port (an integer 1..65535)`);
  return value;
}

/** Resolves options into an instance layout, checking ports and the instance name. */
export function brokerInstance(options: BrokerInstanceOptions = {}): BrokerInstance {
  const name = options.name ?? 'default';
  if (!/^[A-Za-z0-9._-]+$/.test(name))
    throw new Error(`broker name "${name}" must be a plain folder name (letters, digits, . _ -)`);
  const port = checkPort('port', options.port ?? 9092);
  const controllerPort = checkPort('controllerPort', options.controllerPort ?? port + 1);
  const saslPort = options.saslPort === undefined ? undefined : checkPort('saslPort', options.saslPort);
  const ssl = options.ssl && { ...options.ssl, port: checkPort('ssl.port', options.ssl.port) };
  const ports = [port, controllerPort, saslPort, ssl?.port].filter((p) => p !== undefined);
  if (new Set(ports).size !== ports.length)
    throw new Error(`broker ports must differ, got port/controller/sasl/ssl = ${ports.join('/')}`);
  const nodeId = options.nodeId ?? 1;
  if (!Number.isInteger(nodeId) || nodeId < 0)
    throw new Error(`broker nodeId=${nodeId} must be an integer >= 0`);
  const quorum = options.quorum ?? [{ id: nodeId, controllerPort }];
  const self = quorum.find((voter) => voter.id === nodeId);
  if (self?.controllerPort !== controllerPort)
    throw new Error(
      `broker node ${nodeId} (controller port ${controllerPort}) is not a voter of its quorum ${quorumVoters(quorum)}`,
    );
  const dataDir = join(options.dataRoot ?? join(kafkaInfraDir, 'data'), name);
  return {
    name,
    host: '127.0.0.1',
    port,
    controllerPort,
    saslPort,
    scramUsers: options.scramUsers ?? [],
    ssl,
    nodeId,
    quorum,
    dataDir,
    logDir: join(dataDir, 'kraft'),
    propertiesFile: join(dataDir, 'server.properties'),
    pidFile: join(dataDir, 'broker.pid'),
    consoleFile: join(dataDir, 'console.log'),
    serverLogFile: join(dataDir, 'server.log'),
  };
}

function listenerLines(instance: BrokerInstance): string[] {
  const h = instance.host;
  const listeners = [`PLAINTEXT://${h}:${instance.port}`, `CONTROLLER://${h}:${instance.controllerPort}`];
  const advertised = [`PLAINTEXT://${h}:${instance.port}`];
  const protocols = ['PLAINTEXT:PLAINTEXT', 'CONTROLLER:PLAINTEXT'];
  const lines: string[] = [];
  if (instance.saslPort !== undefined) {
    listeners.push(`SASL_PLAINTEXT://${h}:${instance.saslPort}`);
    advertised.push(`SASL_PLAINTEXT://${h}:${instance.saslPort}`);
    protocols.push('SASL_PLAINTEXT:SASL_PLAINTEXT');
    const scram = 'org.apache.kafka.common.security.scram.ScramLoginModule required;';
    lines.push(
      'sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512',
      `listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=${scram}`,
      `listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=${scram}`,
    );
  }
  if (instance.ssl !== undefined) {
    listeners.push(`SSL://${h}:${instance.ssl.port}`);
    advertised.push(`SSL://${h}:${instance.ssl.port}`);
    protocols.push('SSL:SSL');
    lines.push(...sslListenerLines(instance.ssl));
  }
  return [
    `listeners=${listeners.join(',')}`,
    `advertised.listeners=${advertised.join(',')}`,
    `listener.security.protocol.map=${protocols.join(',')}`,
    'controller.listener.names=CONTROLLER',
    // Inter-broker traffic stays on PLAINTEXT so SCRAM and TLS only guard client connections.
    'inter.broker.listener.name=PLAINTEXT',
    ...lines,
  ];
}

/** The SSL listener's own settings (`listener.name.ssl.*`, so no other listener is affected). */
function sslListenerLines(ssl: BrokerSslListener): string[] {
  const prefix = 'listener.name.ssl.ssl';
  const trust = ssl.truststoreLocation;
  return [
    `${prefix}.keystore.type=PEM`,
    `${prefix}.keystore.location=${ssl.keystoreLocation}`,
    ...(trust === undefined
      ? [`${prefix}.client.auth=none`]
      : [
          `${prefix}.truststore.type=PEM`,
          `${prefix}.truststore.location=${trust}`,
          `${prefix}.client.auth=requested`,
        ]),
  ];
}

/** `controller.quorum.voters`: `id@127.0.0.1:port,…`. */
function quorumVoters(quorum: readonly QuorumVoter[]): string {
  return quorum.map((voter) => `${voter.id}@127.0.0.1:${voter.controllerPort}`).join(',');
}

/**
 * The server.properties text for one KRaft node (broker + controller in one JVM), alone or a
 * voter of a quorum of several: each node is a broker too, so the cluster has as many brokers.
 */
export function serverProperties(instance: BrokerInstance): string {
  // Kafka's transaction and offset logs replicated as SPA's topics are (schemas/topics.ts):
  // 3 copies and 2 in sync on 3 brokers, so a broker's death loses no commit or coordinator.
  const internal = clusterReplication(instance.quorum.length);
  return [
    '# Generated by infra/kafka/broker-config.ts on every start; edit that file instead.',
    'process.roles=broker,controller',
    `node.id=${instance.nodeId}`,
    `controller.quorum.voters=${quorumVoters(instance.quorum)}`,
    ...listenerLines(instance),
    `log.dirs=${instance.logDir}`,
    // Topics are declared in schemas/topics.ts; a typo must fail, not create a topic.
    'auto.create.topics.enable=false',
    'num.partitions=1',
    `default.replication.factor=${internal.replicationFactor}`,
    `offsets.topic.replication.factor=${internal.replicationFactor}`,
    'offsets.topic.num.partitions=8',
    `transaction.state.log.replication.factor=${internal.replicationFactor}`,
    `transaction.state.log.min.isr=${internal.minInsyncReplicas}`,
    'transaction.state.log.num.partitions=8',
    // The broker-wide default stays 1 so a one-copy topic (a test's) still takes acks=all
    // writes; SPA's topics set their own (infra/kafka/topics.ts).
    'min.insync.replicas=1',
    // A lone consumer should not wait 3 s for company before its first assignment.
    'group.initial.rebalance.delay.ms=0',
    '',
  ].join('\n');
}

/**
 * A fresh KRaft cluster id: 16 random bytes in URL-safe base64 without padding (a Kafka Uuid),
 * drawn again while it starts with '-', as Kafka's own `Uuid.randomUuid` does: kafka-storage's
 * argument parser reads `-t -xyz…` as a missing value and the format fails (1 start in 64).
 */
export function randomClusterId(random: () => Buffer = () => randomBytes(16)): string {
  for (;;) {
    const id = random().toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

/** The `--add-scram` arguments for kafka-storage format (KRaft bootstraps SCRAM users this way). */
export function scramFormatArgs(users: readonly ScramUser[]): string[] {
  return users.flatMap((user) => {
    // kafka-storage parses `[name=…,password=…]` by splitting on these characters.
    for (const [field, value] of [
      ['username', user.username],
      ['password', user.password],
    ] as const)
      if (value === '' || /[[\],=\s"]/.test(value))
        throw new Error(`SCRAM ${field} "${value}" must be non-empty without [ ] , = " or spaces`);
    const mechanism = user.mechanism ?? 'SCRAM-SHA-256';
    return ['--add-scram', `${mechanism}=[name=${user.username},password=${user.password}]`];
  });
}
