/**
 * ip(), isIP(), ip.isCanonical() and the IP address classes, with Go netip's parsing. Expected
 * values were taken from kube-apiserver 1.37's CEL environment.
 */
import { expect } from 'chai';
import { evaluate, evaluationError } from './evaluate.ts';

describe('policy library: ip', function () {
  it('parses IPv4 and IPv6 addresses and prints them canonically', function () {
    expect(evaluate("ip('192.168.0.1').family()")).to.equal(4n);
    expect(evaluate("ip('::1').family()")).to.equal(6n);
    expect(evaluate("string(ip('2001:DB8:0:0:0:0:0:1'))")).to.equal('2001:db8::1');
    expect(evaluate("string(ip('1:0:0:1:0:0:0:1'))")).to.equal('1:0:0:1::1');
    expect(evaluate("ip('1.2.3.4') == ip('1.2.3.4')")).to.equal(true);
    expect(evaluate("type(ip('1.2.3.4')) == net.IP")).to.equal(true);
  });

  it('refuses malformed addresses, zones and IPv4-mapped IPv6 with the API server messages', function () {
    expect(evaluationError("ip('192.168.0.01')")).to.equal('IP Address "192.168.0.01" parse error during conversion from string: ParseAddr("192.168.0.01"): IPv4 field has octet with leading zero');
    expect(evaluationError("ip('1::2::3')")).to.equal('IP Address "1::2::3" parse error during conversion from string: ParseAddr("1::2::3"): multiple :: in address (at ":3")');
    expect(evaluationError("ip('fe80::1%eth0')")).to.equal('IP address "fe80::1%eth0" with zone value is not allowed');
    expect(evaluationError("ip('::ffff:1.2.3.4')")).to.equal('IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed');
    expect(evaluate("isIP('1.2.3.4')")).to.equal(true);
    expect(evaluate("isIP('1.2.3')")).to.equal(false);
  });

  it('tells canonical forms apart', function () {
    expect(evaluate("ip.isCanonical('2001:db8::1')")).to.equal(true);
    expect(evaluate("ip.isCanonical('2001:DB8::1')")).to.equal(false);
    expect(evaluationError("ip.isCanonical('bad')")).to.match(/^IP Address "bad" parse error/);
  });

  it('classifies addresses as netip does', function () {
    expect(evaluate("ip('0.0.0.0').isUnspecified() && ip('::').isUnspecified()")).to.equal(true);
    expect(evaluate("ip('127.0.0.5').isLoopback() && ip('::1').isLoopback()")).to.equal(true);
    expect(evaluate("ip('224.0.0.1').isLinkLocalMulticast() && ip('ff02::1').isLinkLocalMulticast()")).to.equal(true);
    expect(evaluate("ip('ff12::1').isLinkLocalMulticast()")).to.equal(true);
    expect(evaluate("ip('169.254.1.1').isLinkLocalUnicast() && ip('fe80::1').isLinkLocalUnicast()")).to.equal(true);
    expect(evaluate("ip('8.8.8.8').isGlobalUnicast() && ip('10.0.0.1').isGlobalUnicast()")).to.equal(true);
    expect(evaluate("ip('255.255.255.255').isGlobalUnicast() || ip('224.0.0.1').isGlobalUnicast()")).to.equal(false);
  });

  it('checks addresses taken from the object', function () {
    const service = { spec: { externalIPs: ['10.0.0.1', '8.8.8.8'] } };
    expect(evaluate('object.spec.externalIPs.all(a, isIP(a) && !ip(a).isGlobalUnicast())', service)).to.equal(false);
    expect(evaluate('object.spec.externalIPs.filter(a, ip(a).isGlobalUnicast()).size()', service)).to.equal(2n);
  });
});
