// The globals of the page, for the functions the browser tests run inside it (page.evaluate,
// waitForFunction). Untyped on purpose: the rest of the test tree is Node code without the DOM library.
declare const document: any;
declare const window: any;
declare const localStorage: any;
declare const location: any;
