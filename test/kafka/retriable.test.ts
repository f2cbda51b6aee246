/**
 * Which kafkajs errors are a broker outage (retried: a transaction again, a consumer rejoined)
 * and which are a fault of the request (reported).
 */
import { describe, expect, it } from 'vitest';
import {
  KafkaJSConnectionError,
  KafkaJSError,
  KafkaJSGroupCoordinatorNotFound,
  KafkaJSNonRetriableError,
  KafkaJSProtocolError,
} from 'kafkajs';
import { isTransientBrokerError } from '../../infra/kafka/client/retriable.js';

/** kafkajs' error classes as it constructs them (its typings declare no constructor arguments). */
const make = (Class: unknown, ...args: unknown[]): Error =>
  new (Class as new (...args: unknown[]) => Error)(...args);

describe('isTransientBrokerError', () => {
  it('takes a coordinator still loading after a restart, which kafkajs calls non-retriable, as an outage', () => {
    const error = make(KafkaJSGroupCoordinatorNotFound, 'Failed to find group coordinator');
    expect((error as { retriable?: boolean }).retriable).toBe(false);
    expect(isTransientBrokerError(error)).toBe(true);
  });

  it('takes a lost connection and a retriable protocol error as an outage', () => {
    expect(isTransientBrokerError(make(KafkaJSConnectionError, 'Connection error: ECONNREFUSED'))).toBe(true);
    expect(isTransientBrokerError(make(KafkaJSError, 'coordinator moved', { retriable: true }))).toBe(true);
  });

  it('looks through the wrappers kafkajs puts around the real failure', () => {
    const refused = make(KafkaJSConnectionError, 'Connection error: ECONNREFUSED');
    const wrapped = make(KafkaJSNonRetriableError, 'join failed', { cause: refused });
    expect(isTransientBrokerError(wrapped)).toBe(true);
  });

  it('reports a fault of the request, and anything that is not an error', () => {
    const denied = make(KafkaJSProtocolError, {
      type: 'TOPIC_AUTHORIZATION_FAILED',
      code: 29,
      retriable: false,
      message: 'denied',
    });
    expect(isTransientBrokerError(denied)).toBe(false);
    expect(isTransientBrokerError(make(KafkaJSNonRetriableError, 'bad request'))).toBe(false);
    expect(isTransientBrokerError(new Error('ECONNREFUSED'))).toBe(false);
    expect(isTransientBrokerError(undefined)).toBe(false);
    expect(isTransientBrokerError('KafkaJSConnectionError')).toBe(false);
  });
});
