/**
 * cidr(), isCIDR(), containsIP, containsCIDR, ip(), prefixLength() and masked(). Expected
 * values were taken from kube-apiserver 1.37's CEL environment.
 */
import { expect } from 'chai';
import { evaluate, evaluationError } from './evaluate.ts';

describe('policy library: cidr', function () {
  it('tests membership of addresses, given as strings or ip values', function () {
    expect(evaluate("cidr('192.168.0.0/24').containsIP('192.168.0.1')")).to.equal(true);
    expect(evaluate("cidr('192.168.0.0/24').containsIP(ip('192.168.1.1'))")).to.equal(false);
    expect(evaluate("cidr('192.168.0.0/24').containsIP('::1')")).to.equal(false);
    expect(evaluationError("cidr('192.168.0.0/24').containsIP('bad')")).to.equal('no such overload');
  });

  it('tests containment of networks', function () {
    expect(evaluate("cidr('192.168.0.0/24').containsCIDR('192.168.0.0/25')")).to.equal(true);
    expect(evaluate("cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/23'))")).to.equal(false);
    expect(evaluate("cidr('0.0.0.0/0').containsCIDR('10.0.0.0/8')")).to.equal(true);
    expect(evaluationError("cidr('10.0.0.0/8').containsCIDR('bad')")).to.equal('network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix("bad"): no \'/\'');
  });

  it('gives the address, prefix length and masked network', function () {
    expect(evaluate("string(cidr('192.168.0.1/24').ip())")).to.equal('192.168.0.1');
    expect(evaluate("cidr('192.168.0.1/24').prefixLength()")).to.equal(24n);
    expect(evaluate("string(cidr('192.168.0.1/24').masked())")).to.equal('192.168.0.0/24');
    expect(evaluate("string(cidr('2001:db8::1/33').masked())")).to.equal('2001:db8::/33');
    expect(evaluate("cidr('10.0.0.1/8').masked() == cidr('10.0.0.0/8')")).to.equal(true);
    expect(evaluate("type(cidr('10.0.0.0/8')) == net.CIDR")).to.equal(true);
  });

  it('refuses malformed networks with netip messages', function () {
    expect(evaluationError("cidr('192.168.0.0/33')")).to.match(/netip\.ParsePrefix\("192\.168\.0\.0\/33"\): prefix length out of range$/);
    expect(evaluationError("cidr('192.168.0.0/024')")).to.match(/bad bits after slash: "024"$/);
    expect(evaluationError("cidr('::ffff:1.2.3.4/120')")).to.equal('network address parse error during conversion from string: IPv4-mapped IPv6 address "::ffff:1.2.3.4/120" is not allowed');
    expect(evaluate("isCIDR('10.0.0.0/8')")).to.equal(true);
    expect(evaluate("isCIDR('10.0.0.0')")).to.equal(false);
  });

  it('checks networks and addresses from the object', function () {
    const object = { spec: { podCIDR: '10.244.0.0/16', ips: ['10.244.1.5', '10.245.0.1'] } };
    expect(evaluate('object.spec.ips.all(a, cidr(object.spec.podCIDR).containsIP(a))', object)).to.equal(false);
    expect(evaluate('object.spec.ips.exists(a, cidr(object.spec.podCIDR).containsIP(a))', object)).to.equal(true);
  });
});
