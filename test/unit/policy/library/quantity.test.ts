/**
 * quantity(), isQuantity(), comparisons, arithmetic and conversions, as apimachinery's Quantity
 * behaves in the API server. Expected values were taken from kube-apiserver 1.37's CEL environment.
 */
import { expect } from 'chai';
import { evaluate, evaluationError } from './evaluate.ts';

describe('policy library: quantity', function () {
  it('parses decimal, binary and exponent suffixes and compares values exactly', function () {
    expect(evaluate("quantity('1') == quantity('1000m')")).to.equal(true);
    expect(evaluate("quantity('1') == quantity('1001m')")).to.equal(false);
    expect(evaluate("quantity('100m').compareTo(quantity('0.1'))")).to.equal(0n);
    expect(evaluate("quantity('1Gi').isGreaterThan(quantity('1G'))")).to.equal(true);
    expect(evaluate("quantity('1Gi').isLessThan(quantity('1G'))")).to.equal(false);
    expect(evaluate("quantity('0.1').add(quantity('0.2')).compareTo(quantity('0.3'))")).to.equal(0n);
    expect(evaluate("sign(quantity('-5'))")).to.equal(-1n);
    expect(evaluate("sign(quantity('0'))")).to.equal(0n);
  });

  it('refuses malformed quantities with apimachinery messages', function () {
    expect(evaluationError("quantity('abc')")).to.equal("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
    expect(evaluationError("quantity(' 1')")).to.equal("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
    expect(evaluationError("quantity('1K')")).to.equal("unable to parse quantity's suffix");
    expect(evaluate("isQuantity('5Mi')")).to.equal(true);
    expect(evaluate("isQuantity('5MM')")).to.equal(false);
  });

  it('converts to int only where Go holds an integer, as the API server does', function () {
    expect(evaluate("quantity('1k').asInteger()")).to.equal(1000n);
    expect(evaluate("quantity('100Mi').asInteger()")).to.equal(104857600n);
    expect(evaluate("quantity('1E').asInteger()")).to.equal(1000000000000000000n);
    expect(evaluate("quantity('1.').isInteger()")).to.equal(true);
    // the same values written with a fraction, or too large for Go's int64 form, are not
    expect(evaluate("quantity('1.0').isInteger()")).to.equal(false);
    expect(evaluate("quantity('1Ei').isInteger()")).to.equal(false);
    expect(evaluate("quantity('1.5').add(quantity('0.5')).isInteger()")).to.equal(false);
    expect(evaluationError("quantity('1m').asInteger()")).to.equal('cannot convert value to integer');
  });

  it('adds and subtracts quantities and ints', function () {
    expect(evaluate("quantity('1k').add(1).asInteger()")).to.equal(1001n);
    expect(evaluate("quantity('1.5').sub(1).asApproximateFloat()")).to.equal(0.5);
    expect(evaluate("quantity('2').sub(2).isInteger()")).to.equal(true);
    expect(evaluate("quantity('9223372036854775807').add(1).isInteger()")).to.equal(false);
    expect(evaluate("quantity('9223372036854775807').add(1).compareTo(quantity('9223372036854775808'))")).to.equal(0n);
  });

  it('approximates as a double, rounding below nano units up', function () {
    expect(evaluate("quantity('1.5Gi').asApproximateFloat()")).to.equal(1610612736);
    expect(evaluate("quantity('0.1n').asApproximateFloat()")).to.equal(1e-9);
    expect(evaluate("quantity('-0.1n').asApproximateFloat()")).to.equal(-1e-9);
    expect(evaluate("quantity('1.23456789012345678901').asApproximateFloat()")).to.equal(1.234567891);
    // eslint-disable-next-line no-loss-of-precision -- Go's MaxInt64, where the quantity saturates, as the float64 it becomes (2^63)
    expect(evaluate("quantity('20Ei').asApproximateFloat()")).to.equal(9223372036854775807);
  });

  it('compares resources taken from the object', function () {
    const pod = { spec: { containers: [{ resources: { requests: { memory: '512Mi' }, limits: { memory: '1Gi' } } }] } };
    expect(evaluate('object.spec.containers.all(c, quantity(c.resources.requests.memory).isLessThan(quantity(c.resources.limits.memory)))', pod)).to.equal(true);
    expect(evaluate("object.spec.containers.map(c, quantity(c.resources.limits.memory)).all(q, q.compareTo(quantity('2Gi')) < 0)", pod)).to.equal(true);
  });
});
