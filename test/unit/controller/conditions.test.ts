/** Status conditions (src/controller/conditions.ts): lastTransitionTime moves only when a condition's status does. */
import { expect } from 'chai';
import type { Condition } from '../../../src/api/types.ts';
import { setConditions } from '../../../src/controller/conditions.ts';

describe('controller/conditions', function () {
  const t0 = new Date('2026-01-01T00:00:00.123Z');
  const t1 = new Date('2026-01-02T00:00:00.456Z');

  it('adds new conditions stamped with the generation and the time to the second (the API server drops fractions)', function () {
    const out = setConditions(undefined, [{ type: 'Ready', status: 'False', reason: 'WaitingForEndpoint', message: 'not yet' }], 3, t0);
    expect(out).to.deep.equal([{ type: 'Ready', status: 'False', reason: 'WaitingForEndpoint', message: 'not yet', observedGeneration: 3, lastTransitionTime: '2026-01-01T00:00:00Z' }]);
  });

  it('keeps lastTransitionTime when the status is unchanged, even as reason, message and generation change', function () {
    const first = setConditions(undefined, [{ type: 'Ready', status: 'False', reason: 'A', message: 'a' }], 1, t0);
    const second = setConditions(first, [{ type: 'Ready', status: 'False', reason: 'B', message: 'b' }], 2, t1);
    expect(second).to.deep.equal([{ type: 'Ready', status: 'False', reason: 'B', message: 'b', observedGeneration: 2, lastTransitionTime: '2026-01-01T00:00:00Z' }]);
  });

  it('moves lastTransitionTime when the status changes', function () {
    const first = setConditions(undefined, [{ type: 'Ready', status: 'False', reason: 'A', message: 'a' }], 1, t0);
    const second = setConditions(first, [{ type: 'Ready', status: 'True', reason: 'Ready', message: 'ok' }], 1, t1);
    expect(second[0]!.lastTransitionTime).to.equal('2026-01-02T00:00:00Z');
  });

  it('replaces conditions in place, appends new types after them, leaves others as they were and does not change its input', function () {
    const existing: Condition[] = [
      { type: 'CertificateReady', status: 'True', reason: 'Issued', message: 'ok', observedGeneration: 1, lastTransitionTime: '2025-12-31T00:00:00Z' },
      { type: 'Ready', status: 'False', reason: 'A', message: 'a', observedGeneration: 1, lastTransitionTime: '2025-12-31T00:00:00Z' },
    ];
    const copy = structuredClone(existing);
    const out = setConditions(
      existing,
      [
        { type: 'WebhooksRegistered', status: 'True', reason: 'Registered', message: '1 webhook(s) registered' },
        { type: 'Ready', status: 'True', reason: 'Ready', message: 'served' },
      ],
      2,
      t1,
    );
    expect(out.map((c) => c.type)).to.deep.equal(['CertificateReady', 'Ready', 'WebhooksRegistered']);
    expect(out[0]).to.deep.equal(existing[0]);
    expect(out[1]).to.include({ status: 'True', observedGeneration: 2, lastTransitionTime: '2026-01-02T00:00:00Z' });
    expect(existing).to.deep.equal(copy);
  });
});
