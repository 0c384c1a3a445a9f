/**
 * url(), isURL() and the URL accessors, with Go net/url's parsing. Expected values were taken
 * from kube-apiserver 1.37's CEL environment.
 */
import { expect } from 'chai';
import { evaluate, evaluationError } from './evaluate.ts';

describe('policy library: urls', function () {
  it('splits a URL into scheme, host, hostname, port and escaped path', function () {
    expect(evaluate("url('https://example.com:80/').getScheme()")).to.equal('https');
    expect(evaluate("url('HTTPS://EXAMPLE.com/').getScheme()")).to.equal('https');
    expect(evaluate("url('https://example.com:80/').getHost()")).to.equal('example.com:80');
    expect(evaluate("url('https://example.com:80/').getHostname()")).to.equal('example.com');
    expect(evaluate("url('https://example.com:80/').getPort()")).to.equal('80');
    expect(evaluate("url('https://example.com/').getPort()")).to.equal('');
    expect(evaluate("url('https://[::1]:80/').getHostname()")).to.equal('::1');
    expect(evaluate("url('https://user:pass@example.com/').getHost()")).to.equal('example.com');
    expect(evaluate("url('https://example.com/path with spaces/').getEscapedPath()")).to.equal('/path%20with%20spaces/');
    expect(evaluate("url('https://example.com/a%2Fb/').getEscapedPath()")).to.equal('/a%2Fb/');
    expect(evaluate("url('https://example.com/path#frag').getEscapedPath()")).to.equal('/path');
    expect(evaluate("url('/absolute-path').getEscapedPath()")).to.equal('/absolute-path');
    expect(evaluate("url('/absolute-path').getHost()")).to.equal('');
  });

  it('decodes the query into lists of values per key, dropping malformed pairs', function () {
    expect(evaluate("url('https://example.com/path?k1=a&k2=b&k2=c').getQuery()")).to.deep.equal(
      new Map([
        ['k1', ['a']],
        ['k2', ['b', 'c']],
      ]),
    );
    expect(evaluate("url('https://example.com/path?k1=a;x&k%zz=b&k3=%20+x').getQuery()")).to.deep.equal(new Map([['k3', ['  x']]]));
    expect(evaluate("url('https://example.com/?x=1').getQuery()['x'][0] == '1'")).to.equal(true);
  });

  it('accepts what ParseRequestURI accepts and refuses the rest with its reason', function () {
    expect(evaluate("isURL('https://example.com/')")).to.equal(true);
    expect(evaluate("isURL('/x#y')")).to.equal(true);
    expect(evaluate("isURL('example.com')")).to.equal(false);
    expect(evaluate("isURL('')")).to.equal(false);
    expect(evaluationError("url('example.com')")).to.equal('URL parse error during conversion from string: parse "example.com": invalid URI for request');
    expect(evaluationError("url('')")).to.equal('URL parse error during conversion from string: parse "": empty url');
    expect(evaluationError("url('https://example.com:8x/')")).to.equal('URL parse error during conversion from string: parse "https://example.com:8x/": invalid port ":8x" after host');
    expect(evaluationError("url('https://[1.2.3.4]/')")).to.equal('URL parse error during conversion from string: parse "https://[1.2.3.4]/": invalid IP-literal');
    expect(evaluationError("url('https://exa mple.com/')")).to.equal('URL parse error during conversion from string: parse "https://exa mple.com/": invalid character " " in host name');
    expect(evaluationError("url('http://a/%zz')")).to.equal('URL parse error during conversion from string: parse "http://a/%zz": invalid URL escape "%zz"');
  });

  it('works on untyped fields and compares URLs', function () {
    expect(evaluate('url(object.spec.endpoint).getScheme() == "https"', { spec: { endpoint: 'https://svc.example.com/hook' } })).to.equal(true);
    expect(evaluate("url('https://a/b') == url('https://a/b')")).to.equal(true);
  });
});
