// @ts-check
/*
 * Ready-made configurations for the tools people already use, built from the site's origin and a
 * key (/assets/client-configs.js). The uploader page offers them with the key typed there, and
 * test/node/picgo.test.ts runs PicGo-Core with what this same file builds. Plain ES2017, a classic
 * script: it defines one global, `clientConfigs`, and touches nothing else (no DOM).
 */
"use strict";
// biome-ignore lint/correctness/noUnusedVariables: the script's one global, read by uploader.js and tests.
var clientConfigs = (() => {
  /** @param {string} origin */
  var api = (origin) => `${origin}/api`;

  /**
   * ShareX custom uploader (.sxcu): POST /api, the link read from the JSON answer.
   * @param {string} origin
   * @param {string} key
   */
  function shareX(origin, key) {
    return {
      Version: "15.0.0",
      Name: origin.replace(/^https?:\/\//, ""),
      DestinationType: "ImageUploader, FileUploader",
      RequestMethod: "POST",
      RequestURL: api(origin),
      Headers: { "X-API-Key": key },
      Body: "MultipartFormData",
      FileFormName: "uploads",
      URL: "{json:data.src}",
      ThumbnailURL: "{json:data.thumb}",
      DeletionURL: "{json:data.delete_url}",
      ErrorMessage: "{json:errors}",
    };
  }

  /**
   * PicGo (and PicGo-Core, PicList) with picgo-plugin-web-uploader: the whole config.json of a
   * PicGo-Core that uses it. In PicGo's window the four values of `picBed["web-uploader"]` go into
   * the plugin's form (API URL, POST field name, JSON path, custom headers).
   * @param {string} origin
   * @param {string} key
   */
  function picGo(origin, key) {
    return {
      picBed: {
        current: "web-uploader",
        uploader: "web-uploader",
        "web-uploader": {
          url: api(origin),
          paramName: "uploads",
          jsonPath: "data.src",
          customHeader: JSON.stringify({ "X-API-Key": key }),
          customBody: "",
        },
      },
      picgoPlugins: { "picgo-plugin-web-uploader": true },
    };
  }

  /**
   * uPic's custom host, as its "Import hosts" reads a file: a JSON array of hosts, each serialised
   * to a string, whose `data` is the host's configuration serialised again.
   * @param {string} origin
   * @param {string} key
   * @param {number} now
   */
  function uPic(origin, key, now) {
    var data = {
      url: api(origin),
      method: "POST",
      field: "uploads",
      bodys: "[]",
      headers: JSON.stringify([{ key: "X-API-Key", value: key }]),
      resultPath: JSON.stringify(["data", "src"]),
      domain: "",
      saveKeyPath: "",
      suffix: "",
      useBase64: false,
    };
    var name = origin.replace(/^https?:\/\//, "");
    return [JSON.stringify({ id: String(now), name, type: "custom", data: JSON.stringify(data) })];
  }

  /** @param {string} text */
  var shellQuoted = (text) => `'${text.replace(/'/g, "'\\''")}'`;

  /**
   * Typora's "Custom Command" image uploader: Typora runs it with each image's path as an
   * argument and reads the links from its output, one a line. The API answers the link alone
   * when asked for text/plain; curl's --fail makes a refusal print nothing and fail.
   * @param {string} origin
   * @param {string} key
   */
  function typora(origin, key) {
    var curl =
      `curl -fsS -H ${shellQuoted(`X-API-Key: ${key}`)} -H 'Accept: text/plain' ` +
      `-F "uploads=@$f" ${shellQuoted(api(origin))}`;
    return `sh -c 'for f in "$@"; do ${curl.replace(/'/g, "'\\''")} && echo; done' typora`;
  }

  /**
   * One upload from any shell (Flameshot's --raw included): the link alone on standard output.
   * @param {string} origin
   * @param {string} key
   */
  function shell(origin, key) {
    return (
      `flameshot gui --raw | curl -fsS -H ${shellQuoted(`X-API-Key: ${key}`)} -H 'Accept: text/plain' ` +
      `-F 'uploads=@-;filename=screenshot.png' ${shellQuoted(api(origin))}; echo`
    );
  }

  return { shareX, picGo, uPic, typora, shell };
})();
